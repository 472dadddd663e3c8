package fakeai

// The Conversations API, as far as Responses uses it (public reference):
// POST /v1/conversations creates one ({"id":"conv_…","object":
// "conversation","created_at","metadata"}); a Responses request names it
// with "conversation" (an id, or {"id": …}; not with
// previous_response_id): "Items from this conversation are prepended to
// input_items for this response request. Input items and output items from
// this response are automatically added to this conversation after this
// response completes." GET /v1/conversations/{id}/items lists them
// ({"object":"list","data":[…],"first_id","last_id","has_more"}; order asc
// or desc, limit 1–100, default 20); every item has an id, given when it
// is added if it had none. GET /v1/conversations/{id}/items/{item_id}
// returns one (the item itself; 404 "Item with id '…' not found." when
// there is none), DELETE removes it and answers with the conversation
// object. GET
// /v1/responses/{id} returns a stored response, GET
// /v1/responses/{id}/input_items its input items (the request's own, with
// ids, listed as a conversation's are).

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

const pathConversations = "/v1/conversations"

// conversation is one conversation's items, as compact JSON, oldest first.
type conversation struct {
	created int64
	items   []string
	added   int // items ever added, for their ids
}

// object is the conversation object of id.
func (cv *conversation) object(id string) ordered {
	return ordered{"id", id, "object", "conversation", "created_at", cv.created, "metadata", ordered{}}
}

// withID returns an item with an id: its own, else one made up as the
// API makes one for an input item that had none.
func (cv *conversation) withID(item string) string {
	cv.added++
	return withID(item, fmt.Sprintf("fake_conv_%d", cv.added))
}

// withID returns an item (an object) with an id: its own, else the type's
// prefix (msg for messages, item for the others) and suffix.
func withID(item, suffix string) string {
	if gjson.Get(item, "id").Type == gjson.String {
		return item
	}
	prefix := "item"
	if typ := gjson.Get(item, "type").Str; typ == "message" || typ == "" {
		prefix = "msg"
	}
	id := string(appendJSON(nil, prefix+"_"+suffix))
	rest := strings.TrimSpace(item)[1:]
	if strings.TrimSpace(rest) != "}" {
		id += ","
	}
	return `{"id":` + id + rest
}

// inputItems returns a request's input items: a string input is the user
// message it stands for.
func inputItems(q responsesReq) []string {
	var items []string
	if q.input.Type == gjson.String {
		items = append(items, string(appendJSON(nil, ordered{"type", "message", "role", "user", "content", q.input.Str})))
	} else if q.input.IsArray() {
		q.input.ForEach(func(_, it gjson.Result) bool {
			items = append(items, it.Raw)
			return true
		})
	}
	return items
}

func (f *Server) createConversation(w http.ResponseWriter, rec Request, n int) {
	if rec.Method != http.MethodPost {
		Status(405, "method not allowed")(w, nil, rec)
		return
	}
	id := fmt.Sprintf("conv_fake_%d", n)
	f.mu.Lock()
	if f.convs == nil {
		f.convs = map[string]*conversation{}
	}
	cv := &conversation{created: time.Now().Unix()}
	f.convs[id] = cv
	f.mu.Unlock()
	writeOrdered(w, 200, nil, cv.object(id))
}

// requestConversation returns what a Responses request's conversation
// holds, read as a stored response (its calls and the unanswered ones);
// nil without one.
func (f *Server) requestConversation(q responsesReq) (*storedResponse, *apiErr) {
	c := q.conversation
	if !c.Exists() || c.Type == gjson.Null {
		return nil, nil
	}
	if q.prev.Exists() && q.prev.Type != gjson.Null {
		return nil, oaiErr("Mutually exclusive parameters: Ensure you are only providing one of: 'previous_response_id' or 'conversation'.", "conversation", "mutually_exclusive_parameters")
	}
	id := conversationID(q)
	if id == "" {
		return nil, invalidType("conversation", "a string or an object with an id", c)
	}
	var cv *conversation
	if f != nil {
		f.mu.Lock()
		defer f.mu.Unlock()
		cv = f.convs[id]
	}
	if cv == nil {
		return nil, &apiErr{status: 404, message: fmt.Sprintf("Conversation with id '%s' not found.", id), param: "conversation"}
	}
	s := &storedResponse{}
	for _, it := range cv.items {
		g := gjson.Parse(it)
		id, typ := g.Get("call_id").Str, g.Get("type").Str
		switch {
		case isCall(typ):
			s.calls = append(s.calls, id)
			s.outCalls = append(s.outCalls, id)
		case isCallOutput(typ):
			s.outCalls = slices.DeleteFunc(s.outCalls, func(c string) bool { return c == id })
		}
	}
	return s, nil
}

// conversationID is the id of a request's conversation: the string, or
// the object's id.
func conversationID(q responsesReq) string {
	if q.conversation.IsObject() {
		return q.conversation.Get("id").Str
	}
	return q.conversation.Str
}

// isCall and isCallOutput tell the call items the fake pairs with their
// outputs (function and custom tool calls), and those outputs.
func isCall(typ string) bool { return typ == "function_call" || typ == "custom_tool_call" }

func isCallOutput(typ string) bool {
	return typ == "function_call_output" || typ == "custom_tool_call_output"
}

// addToConversation adds a completed response's input and output items to
// its conversation.
func (f *Server) addToConversation(q responsesReq, output []ordered) {
	id := conversationID(q)
	add := inputItems(q)
	for _, o := range output {
		add = append(add, string(appendJSON(nil, o)))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if cv := f.convs[id]; cv != nil {
		for _, it := range add {
			cv.items = append(cv.items, cv.withID(it))
		}
	}
}

// WithoutID returns an item without its id: the items the API adds for
// the same input twice differ by their ids alone.
func WithoutID(item string) string {
	var o ordered
	gjson.Parse(item).ForEach(func(k, v gjson.Result) bool {
		if k.Str != "id" {
			o = append(o, k.Str, rawJSON(v.Raw))
		}
		return true
	})
	return string(appendJSON(nil, o))
}

// Conversation returns the items of a conversation, oldest first, as
// compact JSON, each with its id (nil if there is none).
func (f *Server) Conversation(id string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if cv := f.convs[id]; cv != nil {
		return slices.Clone(cv.items)
	}
	return nil
}

// PutConversation makes (or replaces) conversation id holding items,
// oldest first, each given an id when it has none: a conversation laid
// out item by item, as no model script would lay it out.
func (f *Server) PutConversation(id string, items ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.convs == nil {
		f.convs = map[string]*conversation{}
	}
	cv := &conversation{created: time.Now().Unix()}
	for _, it := range items {
		cv.items = append(cv.items, cv.withID(it))
	}
	f.convs[id] = cv
}

// deleteConversationItem answers DELETE
// /v1/conversations/{id}/items/{item_id}; false for other requests.
func (f *Server) deleteConversationItem(w http.ResponseWriter, r *http.Request) bool {
	rest, ok := strings.CutPrefix(r.URL.Path, pathConversations+"/")
	id, item, ok2 := strings.Cut(rest, "/items/")
	if r.Method != http.MethodDelete || !ok || !ok2 || strings.Contains(id, "/") || item == "" || strings.Contains(item, "/") {
		return false
	}
	f.mu.Lock()
	cv := f.convs[id]
	found := false
	if cv != nil {
		n := len(cv.items)
		cv.items = slices.DeleteFunc(cv.items, func(it string) bool { return gjson.Get(it, "id").Str == item })
		found = len(cv.items) < n
	}
	f.mu.Unlock()
	switch {
	case cv == nil:
		(&apiErr{status: 404, message: fmt.Sprintf("Conversation with id '%s' not found.", id)}).write(w)
	case !found:
		(&apiErr{status: 404, message: fmt.Sprintf("Item with id '%s' not found.", item)}).write(w)
	default:
		writeOrdered(w, 200, nil, cv.object(id))
	}
	return true
}

// readState answers GET /v1/responses/{id}, GET
// /v1/responses/{id}/input_items, GET /v1/conversations/{id}/items and GET
// /v1/conversations/{id}/items/{item_id}; false for other requests.
func (f *Server) readState(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	if id, ok := strings.CutPrefix(r.URL.Path, pathResponses+"/"); ok && !strings.Contains(id, "/") {
		s := f.storedResponse(id)
		if s == nil || s.object == nil {
			(&apiErr{status: 404, message: fmt.Sprintf("Response with id '%s' not found.", id)}).write(w)
			return true
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(s.object)
		return true
	}
	if rest, ok := strings.CutPrefix(r.URL.Path, pathResponses+"/"); ok {
		id, ok := strings.CutSuffix(rest, "/input_items")
		if !ok || strings.Contains(id, "/") {
			return false
		}
		s := f.storedResponse(id)
		if s == nil {
			(&apiErr{status: 404, message: fmt.Sprintf("Response with id '%s' not found.", id)}).write(w)
			return true
		}
		listItems(w, r, slices.Clone(s.input))
		return true
	}
	rest, ok := strings.CutPrefix(r.URL.Path, pathConversations+"/")
	id, item, one := strings.Cut(rest, "/items/")
	if !one {
		var list bool
		id, list = strings.CutSuffix(rest, "/items")
		ok = ok && list
	}
	if !ok || strings.Contains(id, "/") || one && (item == "" || strings.Contains(item, "/")) {
		return false
	}
	f.mu.Lock()
	var items []string
	cv := f.convs[id]
	if cv != nil {
		items = slices.Clone(cv.items)
	}
	f.mu.Unlock()
	switch {
	case cv == nil:
		(&apiErr{status: 404, message: fmt.Sprintf("Conversation with id '%s' not found.", id)}).write(w)
	case one:
		// One item: the item itself, as the list shows it.
		i := slices.IndexFunc(items, func(it string) bool { return gjson.Get(it, "id").Str == item })
		if i < 0 {
			(&apiErr{status: 404, message: fmt.Sprintf("Item with id '%s' not found.", item)}).write(w)
			break
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(items[i]))
	default:
		listItems(w, r, items)
	}
	return true
}

// listItems answers with a page of items (oldest first), as the API lists
// a conversation's items and a response's input items: order asc or desc
// (the default), limit 1–100 (default 20), after an item id.
func listItems(w http.ResponseWriter, r *http.Request, items []string) {
	limit := 20
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			oaiErr("Invalid 'limit': integer below minimum value or above maximum value (1 to 100).", "limit", "integer_out_of_range").write(w)
			return
		}
		limit = n
	}
	if r.URL.Query().Get("order") != "asc" { // desc is the default
		slices.Reverse(items)
	}
	if after := r.URL.Query().Get("after"); after != "" {
		i := slices.IndexFunc(items, func(it string) bool { return gjson.Get(it, "id").Str == after })
		items = items[i+1:] // all of them when after is not found
	}
	more := len(items) > limit
	items = items[:min(limit, len(items))]
	data := make([]any, len(items))
	for i, it := range items {
		data[i] = rawJSON(it)
	}
	first, last := any(nil), any(nil)
	if len(items) > 0 {
		first, last = gjson.Get(items[0], "id").Value(), gjson.Get(items[len(items)-1], "id").Value()
	}
	writeOrdered(w, 200, nil, ordered{"object", "list", "data", data, "first_id", first, "last_id", last, "has_more", more})
}
