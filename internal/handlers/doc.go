// Package handlers is the HTTP side of the server. The routes, request
// types and strict server interface are generated from api/openapi.yaml
// (api.gen.go, by oapi-codegen); Server implements them, translating HTTP
// to calls of the managers (taskactions, stages, freight, promotions,
// warehouses, projectconfigs, and analysis/resources for Argo Rollouts'
// kinds), the run service (runs) and the log store (logs), and nothing
// more: what an operation does is theirs. Around them:
//   - NewRouter (router.go): chi routes for /api/v1, /healthz, /readyz,
//     /metrics, /login and the dashboard, and Starting, the answers of a
//     server that is not ready yet (starting.go);
//   - the defences against a hostile page: well-formed URLs, the Host
//     allowlist, CORS and cross-origin protection (guard.go);
//   - validation of every request against the OpenAPI document, with
//     problem+json errors naming each field (validate.go, problem.go), and
//     YAML bodies read as kubectl reads them (yamlbody.go, yamlscalar.go);
//   - authentication (authn.go) and the authorization rule of every
//     operation, checked against the document at start (authz.go,
//     taskscope.go);
//   - sessions and login (session.go), task logs (logs.go), the event
//     streams and their slots (server.go, streamslots.go), and request
//     metrics and the access log (metrics.go, middleware.go).
//
// The first comment of the package, in api.gen.go, is the generator's.
package handlers
