"""A pydantic model as the state schema: input validated and coerced into the model, nested
models, and what the checkpointer gives back for them (the state's values, an interrupt
whose payload is a model, a resume value that is a model, `update_state` with a model).

LangGraph's "Use the graph API", section "Use Pydantic models for graph state"
(docs.langchain.com/oss/python/langgraph/use-graph-api): `OverallState(BaseModel)` with
`a: str`, an invalid input (`{"a": 123}`) raising a validation error; accordions
"Serialization Behavior" (`ComplexState` with a `NestedModel`, invoked with a
`ComplexState` instance) and "Runtime Type Coercion" (`{"number": "42", "flag": "true"}`).

Adapted: compiled with a checkpointer and run on threads; the process node of
"Serialization Behavior" asks for a review (`interrupt`) with the nested model as payload
and is resumed with a `NestedModel`; the validation error is an output (its type and
error count, not its text, which names pydantic's version).
"""

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from pydantic import BaseModel, ValidationError

from tests.saver.corpus import config, history, paused


class OverallState(BaseModel):
    a: str


class NestedModel(BaseModel):
    value: str


class ComplexState(BaseModel):
    text: str
    count: int
    nested: NestedModel


class CoercionExample(BaseModel):
    # Pydantic will coerce string numbers to integers
    number: int
    # Pydantic will parse string booleans to bool
    flag: bool


def node(state: OverallState):
    return {"a": "goodbye"}


def process_node(state: ComplexState):
    reviewed = interrupt(state.nested)
    return {
        "text": state.text + " processed",
        "count": state.count + 1,
        "nested": NestedModel(value=f"{state.nested.value} {reviewed.value}"),
    }


def run(checkpointer, pause):
    outputs = []
    builder = StateGraph(OverallState)
    builder.add_node(node)
    builder.add_edge(START, "node")
    builder.add_edge("node", END)
    graph = builder.compile(checkpointer=checkpointer)
    outputs.append(graph.invoke({"a": "hello"}, config("valid")))
    outputs.append(graph.get_state(config("valid")))
    try:
        graph.invoke({"a": 123}, config("invalid"))
    except ValidationError as error:
        outputs.append(("invalid", type(error).__name__, error.error_count()))

    builder = StateGraph(ComplexState)
    builder.add_node("process", process_node)
    builder.add_edge(START, "process")
    builder.add_edge("process", END)
    graph = builder.compile(checkpointer=checkpointer)
    thread = config("complex")
    input_state = ComplexState(text="hello", count=0, nested=NestedModel(value="test"))
    result = graph.invoke(input_state, thread)
    paused(pause, "complex", result)
    outputs.extend([result, graph.get_state(thread)])
    outputs.append(graph.invoke(Command(resume=NestedModel(value="reviewed")), thread))
    graph.update_state(thread, {"nested": NestedModel(value="edited"), "count": "7"})
    outputs.extend([graph.get_state(thread), history(graph, thread)])

    observed = []

    def inspect_node(state: CoercionExample):
        observed.append((state.number, type(state.number), state.flag, type(state.flag)))
        return {}

    builder = StateGraph(CoercionExample)
    builder.add_node("inspect", inspect_node)
    builder.add_edge(START, "inspect")
    builder.add_edge("inspect", END)
    graph = builder.compile(checkpointer=checkpointer)
    outputs.append(graph.invoke({"number": "42", "flag": "true"}, config("coercion")))
    outputs.extend([observed, graph.get_state(config("coercion"))])
    return outputs
