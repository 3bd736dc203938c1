package api

import (
	"encoding/json"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/agentmemory/agentmemory/internal/strictjson"
	"github.com/agentmemory/agentmemory/internal/turns"
)

// writeTurns: POST /v1/turns (scope context or role integration): one turn
// {"conversation_id"|"task_id", "speaker", "text", "at"?} -> 201 the stored turn, or
// {"turns": [...]} -> 201 {"turns": [...]}. The text is masked before it is stored and the
// answer carries the masked text.
func (s *Server) writeTurns(c *gin.Context) {
	data, err := readBody(c)
	if err != nil {
		s.writeError(c, err)
		return
	}
	if err := strictjson.Check(data); err != nil {
		s.writeError(c, err)
		return
	}
	var probe map[string]json.RawMessage
	_ = json.Unmarshal(data, &probe) // a non-object fails the strict decode below
	var in []turns.Input
	_, batch := probe["turns"]
	if batch {
		var req struct {
			Turns []turns.Input `json:"turns"`
		}
		if err := strictjson.Decode(data, &req); err != nil {
			s.writeError(c, err)
			return
		}
		in = req.Turns
	} else {
		var one turns.Input
		if err := strictjson.Decode(data, &one); err != nil {
			s.writeError(c, err)
			return
		}
		in = []turns.Input{one}
	}
	out, err := s.Turns.Write(s.ctx(c), principal(c), in, batch)
	if err != nil {
		s.writeError(c, err)
		return
	}
	if batch {
		c.PureJSON(http.StatusCreated, gin.H{"turns": out})
		return
	}
	c.PureJSON(http.StatusCreated, out[0])
}

// linkIdentity: POST /v1/identity-links (scope context or role integration)
// {"conversation_id"|"task_id", "subject": "email:...", "status": "confirmed"|"unconfirmed"}
// -> 201 {"link_id", "status", "created"} (200 when an existing link was updated).
func (s *Server) linkIdentity(c *gin.Context) {
	var req turns.LinkRequest
	if err := bind(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	res, err := s.Turns.Link(s.ctx(c), principal(c), req)
	if err != nil {
		s.writeError(c, err)
		return
	}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
	}
	c.PureJSON(status, res)
}

// readTurns: POST /v1/turns/read (scope context or role integration)
// {"conversation_id"|"task_id", "after"?, "limit"?} -> 200 {"turns": [...], "next_after"}: a
// page of the conversation's masked turns, oldest first, receipted (turns.read, naming the
// conversation by its keyed hash). An erased conversation answers as one that never
// existed (no turns). A bad body is 400.
func (s *Server) readTurns(c *gin.Context) {
	var req turns.ReadRequest
	if err := bind(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	page, err := s.Turns.Read(s.ctx(c), principal(c), req)
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusOK, page)
}
