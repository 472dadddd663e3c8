// The Vercel AI SDK (ai + @ai-sdk/openai-compatible) on Chat Completions.
//
//   node vercel-ai.mjs <case>
//   case: plain        generateText
//         stream       streamText
//         tool         generateText with get_weather (executed by the SDK,
//                      up to 3 steps: the SDK sends the tool result back)
//         tool-stream  streamText with the same tool loop
//
// Prints one JSON line: {api, case, text, toolCalls, stepCount, finishReason,
// usage, headers}.
import { generateText, streamText, tool, jsonSchema, stepCountIs } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { args, base, apiKey, model, weatherTool, weather, question, headersOf, report } from './clients-lib.mjs';

const [kase] = args(['plain', 'stream', 'tool', 'tool-stream'], ['default']);
const provider = createOpenAICompatible({ name: 'fake', baseURL: `${base}/v1`, apiKey, includeUsage: true });
const tools = {
  [weatherTool.name]: tool({
    description: weatherTool.description,
    inputSchema: jsonSchema(weatherTool.parameters),
    execute: async (input) => JSON.parse(weather(input)),
  }),
};

const params = kase.startsWith('tool')
  ? { model: provider(model), prompt: question, tools, stopWhen: stepCountIs(3), maxRetries: 0 }
  : { model: provider(model), system: 'You are a terse assistant.', prompt: 'Say hello.', maxRetries: 0 };

let out;
if (kase === 'plain' || kase === 'tool') {
  const r = await generateText(params);
  out = { text: r.text, finishReason: r.finishReason, usage: r.totalUsage, stepCount: r.steps.length,
    toolCalls: r.steps.flatMap((s) => s.toolCalls).map((c) => ({ name: c.toolName, input: c.input })),
    headers: headersOf(new Headers(r.response.headers)) };
} else {
  let streamError = null;
  const r = streamText({ ...params, onError: ({ error }) => { streamError = error; } });
  let text = '';
  for await (const delta of r.textStream) text += delta;
  if (streamError) throw streamError;
  const steps = await r.steps;
  const response = await r.response;
  out = { text, finishReason: await r.finishReason, usage: await r.totalUsage, stepCount: steps.length,
    toolCalls: steps.flatMap((s) => s.toolCalls).map((c) => ({ name: c.toolName, input: c.input })),
    headers: headersOf(new Headers(response.headers)) };
}
report({ api: 'chat', client: 'vercel-ai', case: kase, ...out });
