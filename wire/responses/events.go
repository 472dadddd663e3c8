package responses

import (
	"encoding/json"
	"errors"

	"github.com/tidwall/gjson"

	"github.com/skillrouter/skillrouter/wire"
	"github.com/skillrouter/skillrouter/wire/internal/jsonspan"
)

var errNotResponse = errors.New("responses: not a response object with output and a final status")

// event is one Responses stream event as Events writes it: its members in
// the order the API writes them, those an event type lacks left out.
type event struct {
	Type           string          `json:"type"`
	SequenceNumber int             `json:"sequence_number"`
	Response       json.RawMessage `json:"response,omitempty"`
	ItemID         json.RawMessage `json:"item_id,omitempty"`
	OutputIndex    *int            `json:"output_index,omitempty"`
	ContentIndex   *int            `json:"content_index,omitempty"`
	SummaryIndex   *int            `json:"summary_index,omitempty"`
	Item           json.RawMessage `json:"item,omitempty"`
	Part           json.RawMessage `json:"part,omitempty"`
	Delta          json.RawMessage `json:"delta,omitempty"`
	Text           json.RawMessage `json:"text,omitempty"`
	Refusal        json.RawMessage `json:"refusal,omitempty"`
	Name           json.RawMessage `json:"name,omitempty"`
	Arguments      json.RawMessage `json:"arguments,omitempty"`
	Input          json.RawMessage `json:"input,omitempty"`
	Logprobs       json.RawMessage `json:"logprobs,omitempty"`
	// output_text.annotation.added
	AnnotationIndex *int            `json:"annotation_index,omitempty"`
	Annotation      json.RawMessage `json:"annotation,omitempty"`
}

// Events renders a response object, a whole answer, as the events of the
// stream that carries it: response.created and response.in_progress (the
// response in progress: no output, no usage), then each output item added,
// streamed and done, and the final event its status names
// (response.completed, .incomplete or .failed; a response without a status
// is completed), with the response as it is. A message streams each
// content part (added, its output_text or refusal delta and done, done);
// a function_call its arguments, a custom_tool_call its input, a reasoning
// item its summary parts and reasoning text; other items are added and
// done whole. An SDK that accumulates the events gets the response back.
//
// The proxy streams with it an upstream's JSON answer to a streamed
// request (an upstream that ignores stream:true), through the same
// translator as a stream.
func Events(response []byte) ([]byte, error) {
	if !json.Valid(response) {
		return nil, errNotResponse
	}
	ms, err := jsonspan.Members(response)
	if err != nil {
		return nil, errNotResponse
	}
	at, ok := jsonspan.Value(ms, "output")
	if !ok {
		return nil, errNotResponse
	}
	output := response[at.Start:at.End]
	items, err := jsonspan.Elements(output)
	if err != nil {
		return nil, errNotResponse
	}
	final := "response.completed"
	switch status := gjson.GetBytes(response, "status").String(); status {
	case "completed", "":
	case "incomplete", "failed":
		final = "response." + status
	default: // queued, in_progress, cancelled: no answer a stream ends with
		return nil, errNotResponse
	}
	started := []jsonspan.Edit{jsonspan.SetEdit(response, ms, "status", []byte(`"in_progress"`)), {At: at, With: []byte("[]")}}
	for _, k := range []string{"usage", "completed_at", "incomplete_details", "error"} {
		if _, ok := jsonspan.Value(ms, k); ok {
			started = append(started, jsonspan.SetEdit(response, ms, k, []byte("null")))
		}
	}
	inProgress := jsonspan.Apply(response, started...)

	w := &eventWriter{}
	w.add(event{Type: "response.created", Response: inProgress})
	w.add(event{Type: "response.in_progress", Response: inProgress})
	for i, s := range items {
		if err := w.item(i, output[s.Start:s.End]); err != nil {
			return nil, err
		}
	}
	w.add(event{Type: final, Response: response})
	return w.out, nil
}

// eventWriter numbers and writes the events of one response.
type eventWriter struct {
	seq int
	out []byte
}

func (w *eventWriter) add(ev event) {
	ev.SequenceNumber = w.seq
	w.seq++
	w.out = wire.AppendEvent(w.out, ev.Type, wire.Marshal(ev))
}

// item writes the events of output item i: added (in progress, without
// what its deltas bring), its deltas, done (as it is).
func (w *eventWriter) item(i int, it []byte) error {
	ms, err := jsonspan.Members(it)
	if err != nil {
		return errNotResponse
	}
	raw := func(key string) []byte { return jsonspan.Raw(it, ms, key) }
	id := raw("id")
	var added []jsonspan.Edit
	set := func(key, value string) {
		if _, ok := jsonspan.Value(ms, key); ok {
			added = append(added, jsonspan.SetEdit(it, ms, key, []byte(value)))
		}
	}
	set("status", `"in_progress"`)
	var stream func() error
	switch gjson.GetBytes(it, "type").String() {
	case "message":
		added = append(added, jsonspan.SetEdit(it, ms, "content", []byte("[]")))
		stream = func() error { return w.parts(i, id, raw("content")) }
	case "function_call":
		added = append(added, jsonspan.SetEdit(it, ms, "arguments", []byte(`""`)))
		args := raw("arguments")
		stream = func() error {
			if args == nil || jsonspan.IsNull(args) {
				args = []byte(`""`)
			}
			w.add(event{Type: "response.function_call_arguments.delta", ItemID: id, OutputIndex: &i, Delta: args})
			w.add(event{Type: "response.function_call_arguments.done", ItemID: id, OutputIndex: &i, Name: raw("name"), Arguments: args})
			return nil
		}
	case "custom_tool_call":
		input := raw("input")
		if gjson.ParseBytes(input).Type == gjson.String {
			set("input", `""`)
			stream = func() error {
				w.add(event{Type: "response.custom_tool_call_input.delta", ItemID: id, OutputIndex: &i, Delta: input})
				w.add(event{Type: "response.custom_tool_call_input.done", ItemID: id, OutputIndex: &i, Input: input})
				return nil
			}
		}
	case "reasoning":
		set("summary", "[]")
		set("content", "[]")
		stream = func() error { return w.reasoning(i, id, raw("summary"), raw("content")) }
	}
	w.add(event{Type: "response.output_item.added", OutputIndex: &i, Item: jsonspan.Apply(it, added...)})
	if stream != nil {
		if err := stream(); err != nil {
			return err
		}
	}
	w.add(event{Type: "response.output_item.done", OutputIndex: &i, Item: it})
	return nil
}

// parts writes the content parts of message item i: output_text by its
// text delta (then its annotations' events), refusal by its refusal delta,
// any other added and done whole.
func (w *eventWriter) parts(i int, id, content []byte) error {
	if content == nil || jsonspan.IsNull(content) {
		return nil
	}
	parts, err := jsonspan.Elements(content)
	if err != nil {
		return errNotResponse
	}
	for j, s := range parts {
		part := content[s.Start:s.End]
		ms, err := jsonspan.Members(part)
		if err != nil {
			return errNotResponse
		}
		raw := func(key string) []byte { return jsonspan.Raw(part, ms, key) }
		var edits []jsonspan.Edit
		set := func(key, value string) {
			if _, ok := jsonspan.Value(ms, key); ok {
				edits = append(edits, jsonspan.SetEdit(part, ms, key, []byte(value)))
			}
		}
		at := func(ev event) event { ev.ItemID, ev.OutputIndex, ev.ContentIndex = id, &i, &j; return ev }
		switch gjson.GetBytes(part, "type").String() {
		case "output_text":
			set("text", `""`)
			set("annotations", "[]")
			set("logprobs", "[]")
			w.add(at(event{Type: "response.content_part.added", Part: jsonspan.Apply(part, edits...)}))
			text := raw("text")
			if text == nil {
				text = []byte(`""`)
			}
			w.add(at(event{Type: "response.output_text.delta", Delta: text, Logprobs: raw("logprobs")}))
			if anns := raw("annotations"); anns != nil && !jsonspan.IsNull(anns) {
				els, err := jsonspan.Elements(anns)
				if err != nil {
					return errNotResponse
				}
				for k, a := range els {
					w.add(at(event{Type: "response.output_text.annotation.added", AnnotationIndex: &k, Annotation: anns[a.Start:a.End]}))
				}
			}
			w.add(at(event{Type: "response.output_text.done", Text: text, Logprobs: raw("logprobs")}))
		case "refusal":
			set("refusal", `""`)
			w.add(at(event{Type: "response.content_part.added", Part: jsonspan.Apply(part, edits...)}))
			refusal := raw("refusal")
			if refusal == nil {
				refusal = []byte(`""`)
			}
			w.add(at(event{Type: "response.refusal.delta", Delta: refusal}))
			w.add(at(event{Type: "response.refusal.done", Refusal: refusal}))
		default:
			w.add(at(event{Type: "response.content_part.added", Part: part}))
		}
		w.add(at(event{Type: "response.content_part.done", Part: part}))
	}
	return nil
}

// reasoning writes the summary parts and reasoning text of reasoning item i.
func (w *eventWriter) reasoning(i int, id, summary, content []byte) error {
	for _, list := range []struct {
		parts []byte
		emit  func(j int, part, text []byte)
	}{
		{summary, func(j int, part, text []byte) {
			at := func(ev event) event { ev.ItemID, ev.OutputIndex, ev.SummaryIndex = id, &i, &j; return ev }
			empty, _ := jsonspan.Set(part, "text", []byte(`""`))
			w.add(at(event{Type: "response.reasoning_summary_part.added", Part: empty}))
			w.add(at(event{Type: "response.reasoning_summary_text.delta", Delta: text}))
			w.add(at(event{Type: "response.reasoning_summary_text.done", Text: text}))
			w.add(at(event{Type: "response.reasoning_summary_part.done", Part: part}))
		}},
		{content, func(j int, _, text []byte) {
			at := func(ev event) event { ev.ItemID, ev.OutputIndex, ev.ContentIndex = id, &i, &j; return ev }
			w.add(at(event{Type: "response.reasoning_text.delta", Delta: text}))
			w.add(at(event{Type: "response.reasoning_text.done", Text: text}))
		}},
	} {
		if list.parts == nil || jsonspan.IsNull(list.parts) {
			continue
		}
		els, err := jsonspan.Elements(list.parts)
		if err != nil {
			return errNotResponse
		}
		for j, s := range els {
			part := list.parts[s.Start:s.End]
			text := []byte(gjson.GetBytes(part, "text").Raw)
			if gjson.GetBytes(part, "text").Type != gjson.String {
				return errNotResponse
			}
			list.emit(j, part, text)
		}
	}
	return nil
}
