package app

import (
	"context"
	"net/url"
	"strings"

	"github.com/agentmemory/agentmemory/internal/logs"
)

// WarnUnreachableEmbedders logs one warning when knowledge bases exist whose embedding model
// does not answer at OLLAMA_HOST (knowledge.Service.CheckEmbedders): their retrieval answers
// 503 embedder_unavailable until it does. The usual cause after `dev --fake-model` is a plain
// restart without the flag, so the line says so. The warning carries the number of bases, the
// models and OLLAMA_HOST's host (never a space, base or credential); nothing is logged when
// every model answers or no base exists. serve and dev run it once at start.
func (a *App) WarnUnreachableEmbedders(ctx context.Context) {
	st, err := a.Knowledge.CheckEmbedders(ctx)
	if err != nil {
		if ctx.Err() == nil {
			code, cause := logs.Scrub(err)
			a.Log.Warn("could not check the knowledge bases' embedders", "code", code, "cause", cause)
		}
		return
	}
	if len(st.Unreachable) == 0 {
		return
	}
	a.Log.Warn("knowledge bases exist whose embedder does not answer: their retrieval answers 503 embedder_unavailable and ingests wait until it does; bases created under dev --fake-model need --fake-model again",
		"bases", st.Bases, "models", strings.Join(st.Unreachable, ","), "ollama_host", hostOf(a.Config.OllamaHost))
}

// hostOf is the host:port of a URL, without user information, path or query ("" when it
// does not parse).
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Host
}
