// bench/loop_sdk.mjs: the Vercel AI SDK's side of bench/loop.sh.
//
//   node --expose-gc bench/loop_sdk.mjs URL TURNS SYSTEM_PROMPT_FILE
//
// The same three-step scenario as bench/loop_bench.c (a call to echo, a call to calculator,
// the answer), with streamText and the OpenAI-compatible provider against the same scripted
// model server, the same system prompt and the same two tools (zod schemas, as SDK users
// write them). Prints "sdk_ms turns steps_per_turn bytes_per_conversation".
import { readFileSync } from 'node:fs';
import { streamText, tool, stepCountIs } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { z } from 'zod';

const [url, turnsArg, promptFile] = process.argv.slice(2);
const turns = Number(turnsArg);
const system = readFileSync(promptFile, 'utf8');
const provider = createOpenAICompatible({ name: 'bench', baseURL: `${url}/v1`, apiKey: 'bench' });
const model = provider('bench-model');

const tools = {
  echo: tool({
    description: 'Return the given text unchanged.',
    inputSchema: z.object({ text: z.string().describe('The text to return') }),
    execute: async ({ text }) => text,
  }),
  calculator: tool({
    description: 'Evaluate an arithmetic expression (a sum of numbers here).',
    inputSchema: z.object({ expression: z.string().min(1) }),
    execute: async ({ expression }) => ({
      expression,
      result: expression.split('+').reduce((s, x) => s + Number(x), 0),
    }),
  }),
};

async function turn() {
  const messages = [{ role: 'user', content: 'Run the three steps.' }];
  const r = streamText({ model, system, tools, messages, stopWhen: stepCountIs(10) });
  const text = await r.text;
  const steps = await r.steps;
  if (text !== 'All three steps are done.' || steps.length !== 3) {
    throw new Error(`unexpected turn: ${steps.length} steps, text ${JSON.stringify(text)}`);
  }
  return [...messages, ...(await r.response).messages];
}

for (let i = 0; i < 20; i++) await turn();
let t0 = process.hrtime.bigint();
for (let i = 0; i < turns; i++) await turn();
const ms = Number(process.hrtime.bigint() - t0) / 1e6;

// Memory of a conversation: the messages of `turns` turns kept alive.
global.gc?.();
const before = process.memoryUsage().heapUsed;
const kept = [];
for (let i = 0; i < turns; i++) kept.push(await turn());
global.gc?.();
const after = process.memoryUsage().heapUsed;
console.log(`${ms.toFixed(3)} ${turns} 3 ${Math.round((after - before) / turns)} ${kept.length}`);
