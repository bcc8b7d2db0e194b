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
const newestFirst = await agent.threads.search({
  metadata: { source: "js" },
  sortBy: "updated_at",
  sortOrder: "desc",
});

// Agent Chat UI's useStream on a real LangGraph graph: values and messages-tuple, then
// Agent Inbox's resume as a list of {type, args}, streamed as events.
const chat = (await agent.threads.create({ metadata: { source: "js-chat" } })).thread_id;
const chatted = await collect(
  agent.runs.stream(chat, "refund-lg", {
    input: { amount: 300 },
    streamMode: ["values", "messages-tuple"],
  }),
);
const answered = await collect(
  reviewer.runs.stream(chat, "refund-lg", {
    command: { resume: [{ type: "accept", args: null }] },
    streamMode: "events",
  }),
);
const chatDone = await agent.threads.getState(chat);
// A copy of that thread, at rest: its checkpoints under the same ids
const chatCopy = (await agent.threads.copy(chat)).thread_id;
const chatHistory = (await agent.threads.getHistory(chat)).map((s) => s.checkpoint.checkpoint_id);
const copyHistory = (await agent.threads.getHistory(chatCopy)).map((s) => s.checkpoint.checkpoint_id);

// Agent Inbox's "mark as resolved", by the reviewer
const paused2 = (await agent.threads.create()).thread_id;
await agent.runs.wait(paused2, "refund_approval", {
  input: { refund_amount: 80.0, approved: false },
});
await reviewer.threads.updateState(paused2, { values: null, asNode: "__end__" });
const resolved = await agent.threads.get(paused2);

// useStream's stop: runs.cancel on a run at work (the test lets the node finish)
const working = (await agent.threads.create()).thread_id;
const run = await agent.runs.create(working, "steps", { input: { log: "" } });
await agent.runs.cancel(working, run.run_id);
await agent.runs.join(working, run.run_id);
const stopped = await agent.runs.get(working, run.run_id);

// LangGraph's long-term memory store and crons, as a JS client calls them
await agent.store.putItem(["users", "js"], "prefs", { theme: "dark" });
const item = await agent.store.getItem(["users", "js"], "prefs");
const items = await agent.store.searchItems(["users"], { filter: { theme: "dark" } });
await agent.store.deleteItem(["users", "js"], "prefs");
const cron = await agent.crons.createForThread(threadId, "refund_approval", {
  schedule: "0 9 * * 1-5",
  input: { refund_amount: 10.0, approved: false },
});
const crons = await agent.crons.search({ threadId });
await agent.crons.delete(cron.cron_id);

// A thread's stream, resumed after the first run's start: the rest of that run
const threadStream = [];
const controller = new AbortController();
for await (const part of agent.threads.joinStream(threadId, {
  lastEventId: `${runId}:0`,
  signal: controller.signal,
})) {
  threadStream.push(part);
  if (part.id === `${runId}:end`) break;
}
controller.abort();

console.log(
  JSON.stringify({
    item,
    items,
    cron,
    crons,
    threadStream,
    info,
    threadId,
    started,
    paused,
    found,
    rejoined,
    resumed,
    done,
    newestFirst,
    chatted,
    answered,
    chatDone,
    chatCopy,
    chatHistory,
    copyHistory,
    resolved,
    stopped,
  }),
);
