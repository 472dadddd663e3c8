// A plain chat completion through the proxy.
import assert from 'node:assert/strict';
import { client, model, report, headersOf } from './lib.mjs';

const { data, response } = await client.chat.completions
  .create({
    model,
    messages: [
      { role: 'system', content: 'You are a helpful assistant.' },
      { role: 'user', content: 'Please fill in the fields of this PDF form for me.' },
    ],
  })
  .withResponse();

assert.equal(data.object, 'chat.completion');
assert.equal(data.choices[0].message.role, 'assistant');
assert.equal(data.choices[0].message.content, 'Sure, here are the filled fields.');
assert.equal(data.choices[0].finish_reason, 'stop');
assert.equal(data.choices[0].message.tool_calls, undefined);
assert.ok(data.usage.total_tokens > 0);
report({ content: data.choices[0].message.content, headers: headersOf(response), usage: data.usage });
