package router

import (
	"context"
	"testing"

	"github.com/skillrouter/skillrouter/wire/responses"
)

// A non-streaming Responses request with "background": true is answered
// at once with status "queued"; the model runs later and the client reads
// its output with GET /v1/responses/{id} (passed through untouched). The
// proxy's tool loop never sees that output, so a load_skill the
// model calls there reaches the client, which never defined such a tool:
// a background request must not be offered the proxy's tools (as with
// tool_choice "none"; the catalog and auto-loaded bodies still apply).
func TestResponsesBackgroundOffersNoProxyTools(t *testing.T) {
	r := newTestRouter(t, fixture(t))
	for _, body := range []string{
		`{"model":"m","background":true,"input":"extract the tables from this pdf file and merge two pdf documents"}`,
	} {
		req, err := responses.Parse([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		rw, err := r.Rewrite(context.Background(), req.View(), RewriteOptions{}, Overrides{})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(rw.Plan.Tools.Server); n > 0 {
			t.Errorf("%s: offered %d proxy tools (%s...) whose calls the proxy never sees", body, n, rw.Plan.Tools.Server[0].Name)
		}
		if rw.Session != nil && rw.Session.Handles(ToolLoadSkill) {
			t.Errorf("%s: the session answers load_skill", body)
		}
	}
}
