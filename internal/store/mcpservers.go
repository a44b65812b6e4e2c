package store

import (
	"context"
	"time"
)

// MCPServer is a remote MCP server an app declares; its LLM agents call
// its tools. Authenticator names an authenticator of the app ("" for
// none).
type MCPServer struct {
	ID    string
	AppID string
	// UserID is the owner of the app: read with the row, never written.
	UserID        string
	Name          string
	URL           string
	Authenticator string
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// mcpServerSelect reads MCP servers (as ms) with their app's owner.
const mcpServerSelect = `SELECT ms.id, ms.app_id, ms.name, ms.url, ms.authenticator, ms.created_at, ms.updated_at, ap.user_id
	FROM mcp_servers ms JOIN apps ap ON ap.id = ms.app_id`

func scanMCPServer(row interface{ Scan(...any) error }, m *MCPServer) error {
	return row.Scan(&m.ID, &m.AppID, &m.Name, &m.URL, &m.Authenticator, &m.CreatedAt, &m.UpdatedAt, &m.UserID)
}

// MCPServerCreate inserts m; a name the app already has is ErrConflict.
func (s *Store) MCPServerCreate(ctx context.Context, m *MCPServer) error {
	_, err := s.writer().ExecContext(ctx, `INSERT INTO mcp_servers (id, app_id, name, url, authenticator, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		m.ID, m.AppID, m.Name, m.URL, m.Authenticator, s.ts(m.CreatedAt), s.ts(m.UpdatedAt))
	return mapErr(err)
}

// MCPServerUpdate writes m's name, url and authenticator; a name another
// server of the app has is ErrConflict.
func (s *Store) MCPServerUpdate(ctx context.Context, m *MCPServer) error {
	return expectOne(s.writer().ExecContext(ctx, `UPDATE mcp_servers SET name = $2, url = $3, authenticator = $4, updated_at = $5 WHERE id = $1`,
		m.ID, m.Name, m.URL, m.Authenticator, s.ts(m.UpdatedAt)))
}

// MCPServerDelete deletes an MCP server.
func (s *Store) MCPServerDelete(ctx context.Context, id string) error {
	return expectOne(s.writer().ExecContext(ctx, `DELETE FROM mcp_servers WHERE id = $1`, id))
}

// MCPServerGet returns the MCP server with id, whoever owns its app.
func (s *Store) MCPServerGet(ctx context.Context, id string) (*MCPServer, error) {
	var m MCPServer
	err := scanMCPServer(s.reader().QueryRowContext(ctx, mcpServerSelect+` WHERE ms.id = $1`, id), &m)
	return &m, mapErr(err)
}

// MCPServerGetByName returns the MCP server of app called name, or
// ErrNotFound.
func (s *Store) MCPServerGetByName(ctx context.Context, appID, name string) (*MCPServer, error) {
	var m MCPServer
	err := scanMCPServer(s.reader().QueryRowContext(ctx, mcpServerSelect+` WHERE ms.app_id = $1 AND ms.name = $2`, appID, name), &m)
	return &m, mapErr(err)
}

// MCPServerListByApp returns an app's MCP servers in creation order.
func (s *Store) MCPServerListByApp(ctx context.Context, appID string) ([]MCPServer, error) {
	return queryAll(ctx, s.reader(), scanMCPServer, mcpServerSelect+` WHERE ms.app_id = $1 ORDER BY ms.created_at, ms.id`, appID)
}

// MCPServerPage returns a page of an app's MCP servers in creation order,
// and how many it has.
func (s *Store) MCPServerPage(ctx context.Context, appID string, limit, offset int) ([]MCPServer, int, error) {
	var total int
	if err := s.reader().QueryRowContext(ctx, `SELECT COUNT(*) FROM mcp_servers WHERE app_id = $1`, appID).Scan(&total); err != nil {
		return nil, 0, err
	}
	rows, err := queryAll(ctx, s.reader(), scanMCPServer,
		mcpServerSelect+` WHERE ms.app_id = $1 ORDER BY ms.created_at, ms.id LIMIT $2 OFFSET $3`, appID, limit, offset)
	return rows, total, err
}
