package mcpserver

// The wire types of the MCP Skills Extension (SEP-2640,
// io.modelcontextprotocol/skills), which the Go SDK does not define:
// skills/list, skills/get and resources/directory/read.

import "github.com/modelcontextprotocol/go-sdk/mcp"

// Names the extension reserves.
const (
	ExtensionID          = "io.modelcontextprotocol/skills"
	methodListSkills     = "skills/list"
	methodGetSkill       = "skills/get"
	methodReadDirectory  = "resources/directory/read"
	resultTypeComplete   = "complete"
	mimeDirectory        = "inode/directory"
	maxSkillResources    = 512      // resources per skill, SKILL.md included
	maxSkillBytes        = 16 << 20 // sum of the sizes of a skill's resources
	digestPrefix         = "sha256:"
	cacheScopePublic     = "public"
	extensionSettingsDir = "directoryRead"
)

// SkillResource is one file of a skill with the digest and size of its raw bytes.
type SkillResource struct {
	URI    string `json:"uri"`
	Digest string `json:"digest"` // "sha256:" + 64 lowercase hex digits
	Size   int64  `json:"size"`
}

// SkillEntry is the extension's Skill: the URI of its SKILL.md, the
// frontmatter verbatim, and every file (this server never serves "dynamic").
type SkillEntry struct {
	URI         string          `json:"uri"`
	Frontmatter map[string]any  `json:"frontmatter"`
	Resources   []SkillResource `json:"resources"`
}

// ListSkillsParams are the params of skills/list.
type ListSkillsParams struct {
	mcp.ParamsBase
	Cursor string `json:"cursor,omitempty"`
}

// ListSkillsResult is the result of skills/list.
type ListSkillsResult struct {
	mcp.ResultBase
	ResultType string       `json:"resultType"`
	Skills     []SkillEntry `json:"skills"`
	NextCursor string       `json:"nextCursor,omitempty"`
	TTLMs      int          `json:"ttlMs"`
	CacheScope string       `json:"cacheScope"`
}

// GetSkillParams are the params of skills/get.
type GetSkillParams struct {
	mcp.ParamsBase
	URI string `json:"uri"`
}

// GetSkillResult is the result of skills/get.
type GetSkillResult struct {
	mcp.ResultBase
	ResultType string     `json:"resultType"`
	Skill      SkillEntry `json:"skill"`
	TTLMs      int        `json:"ttlMs"`
	CacheScope string     `json:"cacheScope"`
}

// ReadDirectoryParams are the params of resources/directory/read.
type ReadDirectoryParams struct {
	mcp.ParamsBase
	URI    string `json:"uri"`
	Cursor string `json:"cursor,omitempty"`
}

// ReadDirectoryResult is the result of resources/directory/read.
type ReadDirectoryResult struct {
	mcp.ResultBase
	ResultType string          `json:"resultType"`
	Resources  []*mcp.Resource `json:"resources"`
	NextCursor string          `json:"nextCursor,omitempty"`
}
