// The Anthropic Node SDK (@anthropic-ai/sdk) on the Messages API.
//
//   node anthropic.mjs <case> [mode]
//   case: plain     one request with a string system prompt
//         tool      system text blocks (the last with cache_control) and the
//                   get_weather tool; reports the tool_use blocks it got
//         two-step  tool, then runs every get_weather call locally and sends
//                   the assistant turn back (thinking blocks included) with a
//                   user turn of tool_result blocks; reports both steps
//   mode: create    messages.create (JSON)
//         stream    the SDK's messages.stream() accumulator (finalMessage)
//
// Prints one JSON line: {api, case, mode, text, toolCalls, thinking,
// stopReason, id, usage, headers, requestId, events, deltas, steps}. In
// stream mode the text of the deltas must be the final message's text.
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { args, base, apiKey, model, weatherTool, weather, question, headersOf, report } from './clients-lib.mjs';

const [kase, mode] = args(['plain', 'tool', 'two-step'], ['create', 'stream']);
const client = new Anthropic({ baseURL: base, apiKey, maxRetries: 0, timeout: 60_000 });
const tools = [{ name: weatherTool.name, description: weatherTool.description, input_schema: weatherTool.parameters }];
const system = [
  { type: 'text', text: 'You are a weather assistant.' },
  { type: 'text', text: 'Use the get_weather tool for current conditions.', cache_control: { type: 'ephemeral' } },
];

async function send(params) {
  if (mode === 'create') {
    const { data, response, request_id } = await client.messages.create(params).withResponse();
    return { message: data, headers: headersOf(response.headers), requestId: request_id, events: [], deltas: 0 };
  }
  const stream = client.messages.stream(params);
  const events = [];
  let text = '';
  let deltas = 0;
  stream.on('streamEvent', (ev) => events.push(ev.type));
  stream.on('text', (delta) => {
    text += delta;
    deltas++;
  });
  const { response, request_id } = await stream.withResponse();
  const message = await stream.finalMessage();
  assert.equal(text, textOf(message), 'deltas and final text differ');
  return { message, headers: headersOf(response.headers), requestId: request_id, events, deltas };
}

function textOf(message) {
  return message.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
}

const steps = [];
function step(r) {
  const m = r.message;
  const s = {
    text: textOf(m),
    toolCalls: m.content.filter((b) => b.type === 'tool_use').map((b) => ({ id: b.id, name: b.name, input: b.input })),
    thinking: m.content.filter((b) => b.type === 'thinking' || b.type === 'redacted_thinking').map((b) => b.type),
    stopReason: m.stop_reason,
    id: m.id,
    usage: m.usage,
    headers: r.headers,
    requestId: r.requestId,
    events: r.events,
    deltas: r.deltas,
  };
  steps.push(s);
  return s;
}

let last;
if (kase === 'plain') {
  last = step(await send({ model, max_tokens: 256, system: 'You are a terse assistant.', messages: [{ role: 'user', content: 'Say hello.' }] }));
} else {
  const messages = [{ role: 'user', content: question }];
  const first = await send({ model, max_tokens: 1024, system, tools, messages });
  last = step(first);
  if (kase === 'two-step') {
    assert.ok(last.toolCalls.length > 0, 'the first answer must call get_weather');
    assert.equal(last.stopReason, 'tool_use');
    const results = first.message.content
      .filter((b) => b.type === 'tool_use')
      .map((b) => ({ type: 'tool_result', tool_use_id: b.id, content: weather(b.input) }));
    messages.push({ role: 'assistant', content: first.message.content }, { role: 'user', content: results });
    last = step(await send({ model, max_tokens: 1024, system, tools, messages }));
  }
}
report({ api: 'messages', case: kase, mode, ...last, steps });
