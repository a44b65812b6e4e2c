// Package clienttest holds only tests: they prove the OpenAPI document is
// exact enough for the clients people generate from it (DESIGN §4
// Operations). A strict TypeScript client (openapi-typescript +
// openapi-fetch under tsc --strict) and an oapi-codegen Go client are
// generated from the document a live platform serves, and each goes
// through the README's "Try it" and its example app without a cast
// (testdata/clients). A cast the document forces is a defect of the
// document, fixed in internal/api.
package clienttest
