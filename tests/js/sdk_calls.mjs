// The calls Agent Chat UI's useStream and Agent Inbox make, with LangGraph's JS SDK,
// against the server at HOLDPOINT_URL; prints what each answered, as one JSON object,
// for tests/api/js/test_js_sdk.py to check.
import { Client } from "@langchain/langgraph-sdk";

const url = process.env.HOLDPOINT_URL;
const agent = new Client({ apiUrl: url, apiKey: process.env.AGENT_KEY });
const reviewer = new Client({ apiUrl: url, apiKey: process.env.REVIEWER_KEY });

async function collect(stream) {
  const parts = [];
  for await (const part of stream) parts.push(part);
  return parts;
}

const info = await (await fetch(`${url}/info`)).json();
const thread = await agent.threads.create({ metadata: { source: "js" } });
const threadId = thread.thread_id;
const started = await collect(
  agent.runs.stream(threadId, "refund_approval", {
    input: { refund_amount: 120.0, approved: false },
    streamMode: ["values", "updates"],
  }),
);
const paused = await agent.threads.getState(threadId);
const found = await agent.threads.search({ metadata: { source: "js" }, limit: 10 });
const runId = started[0].data.run_id;
const rejoined = await collect(
  agent.runs.joinStream(threadId, runId, { lastEventId: started[1].id }),
);
const resumed = await collect(
  reviewer.runs.stream(threadId, "refund_approval", {
    command: { resume: true },
    streamMode: "updates",
  }),
);
const done = await agent.threads.getState(threadId);

console.log(
  JSON.stringify({ info, threadId, started, paused, found, rejoined, resumed, done }),
);
