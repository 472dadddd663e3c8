package responses

// Taking back a refused turn's items from a conversation. In a
// conversation, each response's input and output items are added to it
// once the response completes (see state.go). When a hidden round
// completed and a later round of the same request is refused, the client
// gets an error, but the conversation holds the completed rounds' items:
// the client's input, the proxy's envelopes, its calls and their outputs.
// A client that retries the turn would leave them there twice. The
// request notes what each round that loops adds (FollowUp), and once it
// is refused the proxy lists the conversation's newest items (AddedPath)
// and deletes those that are the turn's (TakeBack), newest first.
//
// A later round that ends failed (Failed: response.failed, or the
// stream's other terminal event, error) is refused as surely: a failed
// response never completes, adds nothing and is over upstream. Not so a
// round cut on the way (a timeout, a stream that broke off): it may still
// complete upstream and add its items after those before it were taken
// back, leaving them without the calls they answer; its turn's items stay.
// Nor a round that ended incomplete (max_output_tokens reached): it
// completed, an answer the client keeps.
//
// The API gives no ids for the input items it adds, so the turn's items
// are recognised by their place: they must be the conversation's newest,
// each matching what the proxy sent or got (an output item by its id, an
// input item by its type and its text, call_id or id). Anything else (a
// request of another client wrote to the conversation meanwhile, an input
// item the conversation keeps in another form, such as an item_reference)
// leaves the conversation as it is.

import (
	"fmt"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/wire"
	"github.com/skillrouter/skillrouter/wire/internal/openai"
)

// addedItem is an item a round added to the conversation, as a listing of
// the conversation's items shows it.
type addedItem struct {
	id     string // output items: the id the response gave; input items: the id sent, if any
	output bool   // an output item: id is the item's
	typ    string // input items
	role   string // messages
	text   string // messages: their text (openai.ContentText)
	callID string // calls and their outputs
}

// noteAdded records what the round whose request was body and whose answer
// ans loops adds to the request's conversation: body's input items, then
// ans's output items.
func (r *Request) noteAdded(body []byte, ans *wire.Answer) {
	if r.conversation == "" {
		return
	}
	switch in := gjson.GetBytes(body, "input"); {
	case in.Type == gjson.String:
		r.added = append(r.added, addedItem{typ: "message", role: "user", text: in.Str})
	case in.IsArray():
		in.ForEach(r.noteInput)
	}
	for _, id := range ans.OutputIDs {
		r.added = append(r.added, addedItem{id: id, output: true})
	}
}

// noteInput records one input item a round adds.
func (r *Request) noteInput(_, it gjson.Result) bool {
	a := addedItem{typ: it.Get("type").Str, role: it.Get("role").Str, callID: it.Get("call_id").Str, id: it.Get("id").Str}
	if a.typ == "" {
		a.typ = "message"
	}
	if a.typ == "message" {
		a.text = openai.ContentText([]byte(it.Get("content").Raw))
	}
	r.added = append(r.added, a)
	return true
}

// matches reports whether a listed conversation item is a.
func (a addedItem) matches(it gjson.Result) bool {
	if a.output {
		return a.id != "" && it.Get("id").Str == a.id
	}
	typ := it.Get("type").Str
	if typ == "" {
		typ = "message"
	}
	switch {
	case typ != a.typ:
		return false
	case a.typ == "message":
		return it.Get("role").Str == a.role && openai.ContentText([]byte(it.Get("content").Raw)) == a.text
	case a.callID != "":
		return it.Get("call_id").Str == a.callID
	case a.id != "":
		return it.Get("id").Str == a.id
	}
	return true
}

// AddedPath returns where the conversation's newest items are listed,
// enough of them to hold what the request's rounds added (n items; path
// "" when none, or when the conversation's id is not one path segment):
// a path under the client's /v1, not escaped, and a query.
func (r *Request) AddedPath() (path, query string, n int) {
	if len(r.added) == 0 || !wire.Segment(r.conversation) {
		return "", "", 0
	}
	return "/v1/conversations/" + r.conversation + "/items", "order=desc&limit=" + strconv.Itoa(min(len(r.added), stateItems)), len(r.added)
}

// TakeBack returns the paths (under the client's /v1, not escaped) at
// which the items the request's rounds added to its conversation are
// deleted, newest first, given list, the page AddedPath reads. It fails,
// and nothing is to be deleted, unless the conversation's newest items are
// exactly those items.
func (r *Request) TakeBack(list []byte) ([]string, error) {
	data := gjson.GetBytes(list, "data")
	if !data.IsArray() {
		return nil, fmt.Errorf("responses: the conversation's items are not a list")
	}
	items := data.Array()
	n := len(r.added)
	if len(items) < n {
		return nil, fmt.Errorf("responses: the conversation's newest %d items are not the %d the turn added", len(items), n)
	}
	paths := make([]string, 0, n)
	for i := range n {
		it := items[i]
		id := it.Get("id").Str
		if !r.added[n-1-i].matches(it) || !wire.Segment(id) {
			return nil, fmt.Errorf("responses: the conversation's item %d from the newest (%q, a %s) is not the turn's", i+1, id, it.Get("type").Str)
		}
		paths = append(paths, "/v1/conversations/"+r.conversation+"/items/"+id)
	}
	return paths, nil
}

// Failed reports whether the request's last round ended failed upstream:
// a response.failed or error event, or a response with status "failed"
// (see the package's note on taking back a refused turn's items).
func (r *Request) Failed() bool { return r.failed }
