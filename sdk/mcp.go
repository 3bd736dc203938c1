package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// MCPTool is one tool the service's MCP server offers this key: its name, description and
// JSON Schema input, exactly as tools/list lists them (api/mcp.go is their source of truth).
type MCPTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// mcpProtocolVersion is the MCP revision the requests name (the server is stateless and
// negotiates older ones too).
const mcpProtocolVersion = "2025-06-18"

// MCPTools lists the tools the service's MCP server offers this key (POST /mcp tools/list,
// AM-5): it follows the key's scopes and the space's features of the moment (remember needs
// agent_memory:write, search_knowledge knowledge:read with knowledge on; no agent-memory tool
// while agent memory is off). Errors are *Error (401, 403 agent_key_required for a person key)
// or, for a JSON-RPC error, an *Error with Code "mcp_error".
func (c *Client) MCPTools(ctx context.Context) ([]MCPTool, error) {
	var out struct {
		Tools []MCPTool `json:"tools"`
	}
	if err := c.mcp(ctx, "tools/list", map[string]any{}, &out); err != nil {
		return nil, err
	}
	return out.Tools, nil
}

// MCPCallTool calls tool name with arguments (a JSON object; nil sends {}) on the service's
// MCP server (POST /mcp tools/call). It returns the tool's text result (a JSON object) and
// whether the server marked it as a tool error ({"error":{"code","message",...}}, a result
// the model can read); err is for the transport and JSON-RPC failures only.
func (c *Client) MCPCallTool(ctx context.Context, name string, arguments json.RawMessage) (result string, isError bool, err error) {
	if len(arguments) == 0 {
		arguments = json.RawMessage("{}")
	}
	var out struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := c.mcp(ctx, "tools/call", map[string]any{"name": name, "arguments": arguments}, &out); err != nil {
		return "", false, err
	}
	var text strings.Builder
	for _, part := range out.Content {
		if part.Type == "text" {
			text.WriteString(part.Text)
		}
	}
	return text.String(), out.IsError, nil
}

// mcp sends one JSON-RPC request to /mcp and decodes its result into out. The answer is JSON
// or a Server-Sent Events stream whose last data line holds it.
func (c *Client) mcp(ctx context.Context, method string, params, out any) error {
	msg, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		return fmt.Errorf("sdk: encode: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, "POST", c.opt.BaseURL+"/mcp", bytes.NewReader(msg))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.opt.Key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", mcpProtocolVersion)
	if c.opt.AgentVersion != "" {
		req.Header.Set("Agent-Version", c.opt.AgentVersion)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return errUnreachable{err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return errUnreachable{err}
	}
	if resp.StatusCode >= 300 {
		return decodeError(resp, data)
	}
	return decodeRPC(resp.StatusCode, lastEvent(data), out)
}

// lastEvent returns the last "data:" line of an event stream, or data itself when it has none.
func lastEvent(data []byte) []byte {
	out := data
	for _, line := range bytes.Split(data, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("data:")); ok {
			out = rest
		}
	}
	return out
}

// decodeRPC decodes a JSON-RPC answer's result into out; an error member is an *Error with
// Code "mcp_error" and its message.
func decodeRPC(status int, data []byte, out any) error {
	if err := checkAnswerDepth(data); err != nil {
		return err
	}
	var rpc struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(data, &rpc); err != nil {
		return fmt.Errorf("sdk: decode MCP answer: %w", err)
	}
	if rpc.Error != nil {
		return &Error{Status: status, Code: "mcp_error", Message: rpc.Error.Message}
	}
	if err := json.Unmarshal(rpc.Result, out); err != nil {
		return fmt.Errorf("sdk: decode MCP result: %w", err)
	}
	return nil
}
