// LangChain (@langchain/openai ChatOpenAI) on Chat Completions.
//
//   node langchain.mjs <case>
//   case: plain        invoke
//         stream       stream, chunks concatenated
//         tool         bindTools([get_weather]).invoke, run the call, send a
//                      ToolMessage back, invoke again
//         tool-stream  the same with streamed answers
//
// Prints one JSON line: {api, case, text, toolCalls, chunks, usage}.
import { ChatOpenAI } from '@langchain/openai';
import { HumanMessage, SystemMessage, ToolMessage } from '@langchain/core/messages';
import { args, base, apiKey, model, weatherTool, weather, question, report } from './clients-lib.mjs';

const [kase] = args(['plain', 'stream', 'tool', 'tool-stream'], ['default']);
const llm = new ChatOpenAI({ model, apiKey, maxRetries: 0, configuration: { baseURL: `${base}/v1` } });
const streamed = kase.endsWith('stream');

let chunks = 0;
async function ask(runnable, messages) {
  if (!streamed) return runnable.invoke(messages);
  let acc;
  for await (const chunk of await runnable.stream(messages)) {
    chunks++;
    acc = acc ? acc.concat(chunk) : chunk;
  }
  return acc;
}

const text = (m) => (typeof m.content === 'string' ? m.content : m.content.map((p) => p.text ?? '').join(''));
let out;
if (!kase.startsWith('tool')) {
  const m = await ask(llm, [new SystemMessage('You are a terse assistant.'), new HumanMessage('Say hello.')]);
  out = { text: text(m), toolCalls: [], usage: m.usage_metadata ?? null };
} else {
  const bound = llm.bindTools([{ type: 'function', function: weatherTool }]);
  const messages = [new HumanMessage(question)];
  const first = await ask(bound, messages);
  const calls = first.tool_calls ?? [];
  if (calls.length === 0) throw new Error(`no tool call in ${JSON.stringify(first)}`);
  messages.push(first);
  for (const c of calls) messages.push(new ToolMessage({ tool_call_id: c.id, content: weather(c.args) }));
  const second = await ask(bound, messages);
  out = { text: text(second), toolCalls: calls.map((c) => ({ name: c.name, input: c.args })), usage: second.usage_metadata ?? null };
}
report({ api: 'chat', client: 'langchain', case: kase, ...out, chunks });
