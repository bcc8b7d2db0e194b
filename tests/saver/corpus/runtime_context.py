"""Runtime context: a graph with a `context_schema` whose nodes read
`runtime.context` (a `Runtime` argument); the context is given per run (`context=...`),
is not part of the state nor of the checkpoints, and must be given again on resume.

LangGraph's "Use the graph API", section "Add runtime configuration" (`ContextSchema`
TypedDict with `my_runtime_value`, `node(state, runtime: Runtime[ContextSchema])`,
`graph.invoke({}, context={"my_runtime_value": "a"})`) and extended example "specifying
model and system message at runtime" (a dataclass `ContextSchema` with defaults,
`MODELS[runtime.context.model_provider]`, `SystemMessage`)
(docs.langchain.com/oss/python/langgraph/use-graph-api).

Adapted: the models are fake chat models; both graphs are compiled with a checkpointer;
the second asks for approval (`interrupt`) and is resumed with a different context.
"""

from dataclasses import dataclass

from langchain_core.messages import SystemMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

from tests.saver.corpus import chat, config, history, paused


class ContextSchema(TypedDict):
    my_runtime_value: str


class State(TypedDict):
    my_state_value: str


def node(state: State, runtime: Runtime[ContextSchema]):
    if runtime.context["my_runtime_value"] == "a":
        return {"my_state_value": 1}
    elif runtime.context["my_runtime_value"] == "b":
        return {"my_state_value": 2}
    else:
        raise ValueError("Unknown values.")


@dataclass
class ModelContext:
    model_provider: str = "anthropic"
    system_message: str | None = None


def run(checkpointer, pause):
    builder = StateGraph(State, context_schema=ContextSchema)
    builder.add_node(node)
    builder.add_edge(START, "node")
    builder.add_edge("node", END)
    graph = builder.compile(checkpointer=checkpointer)
    outputs = [
        graph.invoke({}, config("a"), context={"my_runtime_value": "a"}),
        graph.invoke({}, config("b"), context={"my_runtime_value": "b"}),
        graph.get_state(config("b")),
    ]

    models = {
        "anthropic": chat("Hello!"),
        "openai": chat("Ciao! Come posso aiutarti oggi?"),
    }

    def call_model(state: MessagesState, runtime: Runtime[ModelContext]):
        approved = interrupt(f"Call {runtime.context.model_provider}?")
        model = models[runtime.context.model_provider if approved else "anthropic"]
        messages = state["messages"]
        if system_message := runtime.context.system_message:
            messages = [SystemMessage(system_message), *messages]
        response = model.invoke(messages)
        return {"messages": [response]}

    builder = StateGraph(MessagesState, context_schema=ModelContext)
    builder.add_node("model", call_model)
    builder.add_edge(START, "model")
    builder.add_edge("model", END)
    graph = builder.compile(checkpointer=checkpointer)

    thread = config("italian")
    input_message = {"role": "user", "content": "hi"}
    result = graph.invoke(
        {"messages": [input_message]},
        thread,
        context={"model_provider": "openai", "system_message": "Respond in Italian."},
    )
    paused(pause, "italian", result)
    outputs.append(result)
    response = graph.invoke(
        Command(resume=True),
        thread,
        context={"model_provider": "openai", "system_message": "Respond in Italian."},
    )
    outputs.extend([response, graph.get_state(thread), history(graph, thread)])
    return outputs
