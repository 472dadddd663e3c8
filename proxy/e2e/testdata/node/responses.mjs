// The OpenAI Node SDK (openai@6) on the Responses API.
//
//   node responses.mjs <case> [mode]
//   case: plain     one request: instructions + a string input
//         tool      a developer message + a user message and the get_weather
//                   function tool; reports the function calls it got
//         two-step  tool, then runs every get_weather call locally and sends
//                   the whole transcript back with function_call_output items
//                   (stateless); reports both steps
//         chained   like two-step, but the second request continues the first
//                   with previous_response_id and sends only the outputs
//         conversation  like chained, in a conversation (conversations.create);
//                   then lists the conversation's items with the SDK's
//                   auto-pager (one item a page, oldest first) and retrieves
//                   each by its id; reports them as items
//         count     responses.inputTokens.count (the mode is not used)
//   mode: create    responses.create (JSON)
//         stream    responses.create({stream: true}), raw events
//         helper    the SDK's responses.stream() accumulator (finalResponse)
//
// Prints one JSON line: {api, case, mode, text, toolCalls, status, id, usage,
// headers, events, deltas, steps}. Protocol invariants are asserted here:
// sequence numbers count from 0 without gaps, and the text of the deltas is
// the text of the final response.
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { args, base, apiKey, model, weatherTool, weather, question, headersOf, report } from './clients-lib.mjs';

const [kase, mode] = args(['plain', 'tool', 'two-step', 'chained', 'conversation', 'count'], ['create', 'stream', 'helper']);
const client = new OpenAI({ baseURL: `${base}/v1`, apiKey, maxRetries: 0, timeout: 60_000 });
const tools = [{ type: 'function', ...weatherTool, strict: true }];

// send makes one request in the chosen mode and returns what the client got.
async function send(params) {
  if (mode === 'create') {
    const { data, response } = await client.responses.create(params).withResponse();
    return { response: data, headers: headersOf(response.headers), events: [], deltas: 0, text: data.output_text };
  }
  if (mode === 'stream') {
    const { data: stream, response } = await client.responses.create({ ...params, stream: true }).withResponse();
    const events = [];
    let text = '';
    let deltas = 0;
    let final = null;
    for await (const ev of stream) {
      assert.equal(ev.sequence_number, events.length, `sequence_number of ${ev.type}`);
      events.push(ev.type);
      if (ev.type === 'response.output_text.delta') {
        text += ev.delta;
        deltas++;
      }
      if (ev.type === 'response.completed') final = ev.response;
      if (ev.type === 'response.failed' || ev.type === 'error') throw new Error(`stream failed: ${JSON.stringify(ev)}`);
    }
    assert.ok(final, 'no response.completed event');
    assert.equal(text, textOf(final), 'deltas and final text differ');
    return { response: final, headers: headersOf(response.headers), events, deltas, text };
  }
  const stream = client.responses.stream(params);
  const events = [];
  let deltas = 0;
  stream.on('event', (ev) => events.push(ev.type));
  stream.on('response.output_text.delta', () => deltas++);
  const final = await stream.finalResponse();
  return { response: final, headers: {}, events, deltas, text: textOf(final) };
}

// textOf joins the output_text parts of a response's message items (the
// helper's finalResponse has no output_text shortcut).
function textOf(response) {
  return response.output
    .filter((o) => o.type === 'message')
    .flatMap((o) => o.content)
    .filter((c) => c.type === 'output_text')
    .map((c) => c.text)
    .join('');
}

function calls(response) {
  return response.output
    .filter((o) => o.type === 'function_call')
    .map((o) => ({ name: o.name, arguments: o.arguments, callId: o.call_id }));
}

function outputsFor(response) {
  return response.output
    .filter((o) => o.type === 'function_call')
    .map((o) => ({ type: 'function_call_output', call_id: o.call_id, output: weather(o.arguments) }));
}

const steps = [];
function step(r) {
  const s = { text: r.text, toolCalls: calls(r.response), status: r.response.status, id: r.response.id,
    usage: r.response.usage, headers: r.headers, events: r.events, deltas: r.deltas };
  steps.push(s);
  return s;
}

let last;
let conversation;
if (kase === 'count') {
  // responses.inputTokens.count: text is the count the client got.
  const { data, response } = await client.responses.inputTokens.count({ model, input: question, tools }).withResponse();
  assert.equal(data.object, 'response.input_tokens');
  last = { text: String(data.input_tokens), toolCalls: [], headers: headersOf(response.headers), events: [], deltas: 0 };
} else if (kase === 'plain') {
  last = step(await send({ model, instructions: 'You are a terse assistant.', input: 'Say hello.' }));
} else {
  const input = [
    { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Answer weather questions with the tool.' }] },
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: question }] },
  ];
  // conversation: both turns in a conversation made with conversations.create.
  conversation = kase === 'conversation' ? (await client.conversations.create({})).id : undefined;
  const first = await send({ model, input, tools, conversation });
  last = step(first);
  if (kase !== 'tool') {
    assert.ok(last.toolCalls.length > 0, 'the first answer must call get_weather');
    const outputs = outputsFor(first.response);
    const next = kase === 'two-step'
      ? { model, tools, input: [...input, ...first.response.output, ...outputs] }
      : kase === 'conversation'
        ? { model, tools, conversation, input: outputs }
        : { model, tools, previous_response_id: first.response.id, input: outputs };
    last = step(await send(next));
  }
}
// items: the conversation as the client reads it back, paged one item at
// a time (ConversationCursorPage goes on from last_id), each also
// retrieved by its id.
let items;
if (kase === 'conversation') {
  items = [];
  for await (const it of client.conversations.items.list(conversation, { limit: 1, order: 'asc' })) {
    const one = await client.conversations.items.retrieve(it.id, { conversation_id: conversation });
    assert.deepEqual(one, it, 'an item retrieved by its id differs from the listed one');
    const text = (Array.isArray(it.content) ? it.content.map((c) => c.text ?? '').join('') : it.content) ?? it.output ?? '';
    items.push({ type: it.type, name: it.name, role: it.role, callId: it.call_id, text });
  }
}
report({ api: 'responses', case: kase, mode, ...last, steps, items });
