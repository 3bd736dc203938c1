package api

import (
	_ "embed"
	"net/http"

	"github.com/gin-gonic/gin"
)

// OpenAPIDocument is the OpenAPI 3.1 document of the whole REST API (api/openapi.json),
// served at GET /openapi.json without a key. api/openapi_test.go validates real requests and
// answers against it and checks that every route of routes.go is in it.
//
//go:embed openapi.json
var OpenAPIDocument []byte

// openAPI: GET /openapi.json (no key) -> the OpenAPI document.
func (s *Server) openAPI(c *gin.Context) {
	c.Header("Cache-Control", "public, max-age=300")
	c.Data(http.StatusOK, "application/json", OpenAPIDocument)
}

// Routes lists the method and path template of every route of the engine (the OpenAPI test
// checks each is documented).
func (s *Server) Routes() gin.RoutesInfo { return s.engine.Routes() }
