// A step of an agent's tool loop (the messages end with the client's tool
// result) through the proxy in front of an upstream that validates message
// order as Mistral's API does: the skill's body must not follow the tool
// message. The client sees plain answers, streaming and not.
import assert from 'node:assert/strict';
import { client, model, report } from './lib.mjs';

const tools = [
  {
    type: 'function',
    function: {
      name: 'read_file',
      description: 'Read a file of the workspace',
      parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    },
  },
];
const out = {};

for (const stream of [false, true]) {
  const messages = [
    { role: 'system', content: 'You are a helpful assistant.' },
    { role: 'user', content: 'Please fill in the fields of this PDF form for me.' },
  ];
  const first = await client.chat.completions.create({ model, messages, tools });
  const msg = first.choices[0].message;
  assert.equal(msg.tool_calls.length, 1);
  messages.push(msg, { role: 'tool', tool_call_id: msg.tool_calls[0].id, content: 'form.pdf: name, date, signature' });

  let answer;
  if (stream) {
    const s = client.chat.completions.stream({ model, messages, tools });
    answer = (await s.finalChatCompletion()).choices[0].message.content;
  } else {
    answer = (await client.chat.completions.create({ model, messages, tools })).choices[0].message.content;
  }
  out[stream ? 'stream' : 'plain'] = answer;
}
report(out);
