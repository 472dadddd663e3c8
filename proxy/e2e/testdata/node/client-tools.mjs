// The client's own tool: the proxy must hand the call to the client and pass
// the client's tool result back upstream, streaming and not.
import assert from 'node:assert/strict';
import { client, model, report } from './lib.mjs';

const tools = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Current weather for a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  },
];
const weather = ({ city }) => JSON.stringify({ city, sky: 'sunny', celsius: 21 });
const out = {};

for (const stream of [false, true]) {
  const messages = [{ role: 'user', content: 'What is the weather in Oslo?' }];
  let msg;
  if (stream) {
    const s = client.chat.completions.stream({ model, messages, tools });
    msg = (await s.finalChatCompletion()).choices[0].message;
  } else {
    const r = await client.chat.completions.create({ model, messages, tools });
    assert.equal(r.choices[0].finish_reason, 'tool_calls');
    msg = r.choices[0].message;
  }
  assert.equal(msg.tool_calls.length, 1);
  const call = msg.tool_calls[0];
  assert.equal(call.function.name, 'get_weather');
  assert.deepEqual(JSON.parse(call.function.arguments), { city: 'Oslo' });
  messages.push(msg, { role: 'tool', tool_call_id: call.id, content: weather(JSON.parse(call.function.arguments)) });

  const second = await client.chat.completions.create({ model, messages, tools });
  assert.equal(second.choices[0].message.content, 'It is sunny in Oslo.');
  out[stream ? 'stream' : 'plain'] = { callId: call.id, answer: second.choices[0].message.content };
}
report(out);
