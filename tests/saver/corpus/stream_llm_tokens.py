"""Streaming a model's tokens with `stream_mode="messages"`: `(message_chunk, metadata)`
pairs from the model calls inside nodes, with the metadata to filter them by node or by
the model's tags; sync and async.

LangGraph's "Stream outputs", section "LLM tokens" (`MyState` dataclass, `call_model`,
`graph.stream(..., stream_mode="messages")`), extended examples "filtering by tags"
(`joke_model` tagged "joke", `poem_model` tagged "poem", `graph.astream`) and "streaming
LLM tokens from specific nodes" (`metadata["langgraph_node"]`)
(docs.langchain.com/oss/python/langgraph/streaming).

Adapted: the models are fake chat models (which stream their reply word by word); the
graphs are compiled with a checkpointer and run on threads; the chunks and their
metadata are outputs, not printed.
"""

import asyncio
from dataclasses import dataclass
from typing import TypedDict

from langgraph.graph import START, StateGraph

from tests.saver.corpus import FakeChat, config


@dataclass
class MyState:
    topic: str
    joke: str = ""


class State(TypedDict):
    topic: str
    joke: str
    poem: str


def run(checkpointer, pause):
    llm = FakeChat(messages=iter(["Why did the ice cream cry? It had a meltdown."]))

    def call_model(state: MyState):
        """Call the LLM to generate a joke about a topic"""
        llm_response = llm.invoke(
            [{"role": "user", "content": f"Generate a joke about {state.topic}"}]
        )
        return {"joke": llm_response.content}

    graph = StateGraph(MyState).add_node(call_model).add_edge(START, "call_model")
    graph = graph.compile(checkpointer=checkpointer)
    thread = config("tokens")
    tokens = list(graph.stream({"topic": "ice cream"}, thread, stream_mode="messages"))
    outputs = [tokens, [chunk.content for chunk, _ in tokens if chunk.content]]
    outputs.append(graph.get_state(thread))

    joke_model = FakeChat(messages=iter(["Cats rule dogs drool."]), tags=["joke"])
    poem_model = FakeChat(messages=iter(["Soft paws at dawn."]), tags=["poem"])

    async def call_models(state, config):
        topic = state["topic"]
        joke_response = await joke_model.ainvoke(
            [{"role": "user", "content": f"Write a joke about {topic}"}], config
        )
        poem_response = await poem_model.ainvoke(
            [{"role": "user", "content": f"Write a short poem about {topic}"}], config
        )
        return {"joke": joke_response.content, "poem": poem_response.content}

    tagged = StateGraph(State).add_node("call_model", call_models)
    tagged = tagged.add_edge(START, "call_model").compile(checkpointer=checkpointer)

    async def stream():
        return [
            pair
            async for pair in tagged.astream(
                {"topic": "cats"}, config("tags"), stream_mode="messages"
            )
        ]

    pairs = asyncio.run(stream())
    outputs.append(pairs)
    outputs.append([msg.content for msg, metadata in pairs if metadata["tags"] == ["joke"]])
    outputs.append(
        [msg.content for msg, metadata in pairs if metadata["langgraph_node"] == "call_model"]
    )
    outputs.append(tagged.get_state(config("tags")))
    return outputs
