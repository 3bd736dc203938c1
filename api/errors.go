package api

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/agentmemory/agentmemory/api/httpfault"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/notes"
)

// StatusClientClosedRequest is the status of a request whose caller went away before its
// answer (nginx's 499): nothing is left to read it, but the access log and the metrics say
// what happened instead of a 500 (httpfault.StatusClientClosedRequest).
const StatusClientClosedRequest = httpfault.StatusClientClosedRequest

// errorBody is the JSON shape of every error: {"error": {"code", "message", ...details}}.
type errorBody map[string]any

// writeError answers err as JSON. A *fault.Error gets its mapped status, code and details; a
// body over the cap gets 413; context.Canceled while the request's own context has ended
// (the caller went away) gets 499 "request_canceled", not logged as an error; anything else
// is logged once, as the database's error code and a scrubbed cause (logs.Scrub: never the
// driver's message, which may quote a row), and answered 500 "internal" with no detail.
func (s *Server) writeError(c *gin.Context, err error) {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		err = fault.New(fault.TooLarge, "body_too_large", "the request body is over %d bytes", tooBig.Limit)
	}
	if fault.As(err) == nil && errors.Is(err, context.Canceled) && c.Request.Context().Err() != nil {
		err = fault.New(fault.Canceled, "request_canceled", "the request was cancelled before it finished")
	}
	fe := fault.As(err)
	if fe == nil {
		httpfault.LogInternal(c.Request.Context(), s.log, "internal error", err, "route", c.FullPath(), "request_id", c.GetString(requestIDKey))
		c.AbortWithStatusJSON(http.StatusInternalServerError, errorBody{"error": gin.H{"code": "internal", "message": "internal error"}})
		return
	}
	if fe.Code == notes.CodePersonalData {
		kinds, _ := fe.Details["kinds"].([]string)
		s.Metrics.NoteRefused(kinds)
	}
	inner := gin.H{"code": fe.Code, "message": fe.Message}
	for k, v := range fe.Details {
		inner[k] = v
	}
	body := errorBody{"error": inner}
	for k, v := range fe.Extra {
		body[k] = v
	}
	if fe.RetryAfter > 0 {
		c.Header("Retry-After", strconv.Itoa(int(math.Ceil(fe.RetryAfter.Seconds()))))
	}
	status := httpfault.Status(fe.Kind)
	if status >= 500 && fe.Kind != fault.Unavailable {
		s.log.ErrorContext(c.Request.Context(), "request failed", "route", c.FullPath(), "code", fe.Code)
	}
	c.AbortWithStatusJSON(status, body)
}

// recoverJSON turns a panic into a logged 500 "internal".
func (s *Server) recoverJSON() gin.HandlerFunc {
	return gin.CustomRecovery(func(c *gin.Context, rec any) {
		s.log.ErrorContext(c.Request.Context(), "panic", "route", c.FullPath(), "request_id", c.GetString(requestIDKey))
		c.AbortWithStatusJSON(http.StatusInternalServerError, errorBody{"error": gin.H{"code": "internal", "message": "internal error"}})
	})
}
