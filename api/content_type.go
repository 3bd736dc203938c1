package api

import (
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
)

// bodyRoutes maps "METHOD /gin/:path" to whether the route takes a request body, read from
// api/openapi.json's requestBody (so the rule follows the documented API): built once.
var bodyRoutes = func() map[string]bool {
	var spec struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPIDocument, &spec); err != nil {
		panic("api: openapi.json: " + err.Error())
	}
	out := map[string]bool{}
	for path, ops := range spec.Paths {
		ginPath := path
		for {
			i := strings.IndexByte(ginPath, '{')
			if i < 0 {
				break
			}
			j := strings.IndexByte(ginPath[i:], '}')
			if j < 0 {
				break
			}
			ginPath = ginPath[:i] + ":" + ginPath[i+1:i+j] + ginPath[i+j+1:]
		}
		for method, raw := range ops {
			var op map[string]json.RawMessage
			if json.Unmarshal(raw, &op) != nil {
				continue
			}
			_, has := op["requestBody"]
			out[strings.ToUpper(method)+" "+ginPath] = has
		}
	}
	return out
}()

// jsonMediaType reports whether a Content-Type is JSON: application/json or
// application/<anything>+json, with at most a charset parameter, which must be UTF-8.
func jsonMediaType(v string) bool {
	mt, params, err := mime.ParseMediaType(v)
	if err != nil {
		return false
	}
	suffixed := strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json") &&
		len(mt) > len("application/+json") // a subtype before "+json", not "application/+json"
	if mt != "application/json" && !suffixed {
		return false
	}
	for k, val := range params {
		if k != "charset" || !strings.EqualFold(val, "utf-8") {
			return false
		}
	}
	return true
}

// checkBody enforces the body rules of api/openapi.json before any handler reads a body: on a
// route with a requestBody, a non-empty body must be sent as JSON (jsonMediaType), else 415
// "unsupported_media_type"; on a route without one, a non-empty body is 400
// "unexpected_body". /mcp follows its own transport's rules, and unknown routes get their 404.
func (s *Server) checkBody() gin.HandlerFunc {
	return func(c *gin.Context) {
		route := c.FullPath()
		hasBody, known := bodyRoutes[c.Request.Method+" "+route]
		if !known || route == "/mcp" || c.Request.Body == nil || c.Request.Body == http.NoBody {
			c.Next()
			return
		}
		if hasBody {
			if c.Request.ContentLength != 0 && !jsonMediaType(c.GetHeader("Content-Type")) {
				c.AbortWithStatusJSON(http.StatusUnsupportedMediaType, errorBody{"error": gin.H{
					"code": "unsupported_media_type", "message": "send the body as Content-Type: application/json"}})
				return
			}
			c.Next()
			return
		}
		nonEmpty := c.Request.ContentLength > 0
		if c.Request.ContentLength < 0 { // unknown length: look for a first byte
			var one [1]byte
			n, _ := io.ReadFull(c.Request.Body, one[:])
			nonEmpty = n > 0
		}
		if nonEmpty {
			c.AbortWithStatusJSON(http.StatusBadRequest, errorBody{"error": gin.H{
				"code": "unexpected_body", "message": "this route takes no request body"}})
			return
		}
		c.Next()
	}
}
