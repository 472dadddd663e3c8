package docs

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseBlocks(t *testing.T) {
	md := "# Title\n\n" +
		"```sh\necho one\n```\n\n" +
		"<!-- docs-test: skip (needs docker) -->\n\n" +
		"```bash\ndocker run x\n```\n\n" +
		"<!-- docs-test: skip -->\n" +
		"```sh\nmake test\n```\n\n" +
		"<!-- docs-test: skip (a reason) -->\n" +
		"A paragraph in between: the marker is not for the next block.\n\n" +
		"```python\nprint(1)\n```\n\n" +
		"1. In a list:\n\n" +
		"   ```js\n   console.log(1);\n   ```\n\n" +
		"```\nplain output\n```\n"
	got := parseBlocks("docs/x.md", md)
	want := []block{
		{file: "docs/x.md", line: 3, lang: "sh", text: "echo one\n"},
		{file: "docs/x.md", line: 9, lang: "bash", text: "docker run x\n", skip: "needs docker"},
		{file: "docs/x.md", line: 14, lang: "sh", text: "make test\n", marker: "skip"},
		{file: "docs/x.md", line: 21, lang: "python", text: "print(1)\n"},
		{file: "docs/x.md", line: 27, lang: "js", text: "console.log(1);\n"},
		{file: "docs/x.md", line: 31, lang: "", text: "plain output\n"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	kinds := []string{"sh", "sh", "sh", "python", "js", ""}
	for i, b := range got {
		if b.kind() != kinds[i] {
			t.Errorf("block %d: kind %q, want %q", i, b.kind(), kinds[i])
		}
	}
}

// TestShellScript: commands that serve until stopped run bounded on the
// given address; everything else talks to the test's proxy where the
// documentation says 127.0.0.1:8080.
func TestShellScript(t *testing.T) {
	e := &docsEnv{proxyAddr: "127.0.0.1:5555"}
	text := "# Ollama\nrouter serve --skills examples/skills\n\n" +
		"SKILLROUTER_UPSTREAM_API_KEY=$OPENAI_API_KEY router serve --skills examples/skills \\\n    --upstream https://api.openai.com/v1\n" +
		"bin/router serve --listen 127.0.0.1:8080 --exec   # tier 3\n" +
		"router serve --print-config\n" +
		"router demo --keep --listen 127.0.0.1:8080\n" +
		"curl -s http://127.0.0.1:8080/v1/models | jq .\n"
	got := strings.TrimPrefix(e.shellScript(text, "127.0.0.1:7777"), boundedPrelude)
	want := "# Ollama\n" +
		"docs_bounded 127.0.0.1:7777 '' router serve --skills examples/skills\n\n" +
		"SKILLROUTER_UPSTREAM_API_KEY=$OPENAI_API_KEY docs_bounded 127.0.0.1:7777 '' router serve --skills examples/skills      --upstream https://api.openai.com/v1\n" +
		"docs_bounded 127.0.0.1:7777 '' bin/router serve --listen 127.0.0.1:7777 --exec\n" +
		"router serve --print-config\n" +
		"docs_bounded 127.0.0.1:7777 'Ctrl-C to stop' router demo --keep --listen 127.0.0.1:7777\n" +
		"curl -s http://127.0.0.1:5555/v1/models | jq .\n\n"
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}
