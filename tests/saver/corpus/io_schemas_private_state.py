"""Input and output schemas, and private state passed between two nodes: the input is
filtered by the input schema, the output by the output schema, and a node's private keys
reach only the node that asks for them; what a checkpointer keeps is the overall state.

LangGraph's "Use the graph API", sections "Define input and output schemas"
(`StateGraph(OverallState, input_schema=InputState, output_schema=OutputState)`,
`graph.invoke({"question": "hi"})` gives `{'answer': 'bye'}`) and "Pass private state
between nodes" (`node_1` returns `Node1Output` with `private_data`, `node_2` takes
`Node2Input`, `node_3` the overall state)
(docs.langchain.com/oss/python/langgraph/use-graph-api).

Adapted: compiled with a checkpointer; the prints are recorded; `node_3` is preceded by a
static breakpoint (`interrupt_before`) so that the private channel is seen in a paused
thread's state.
"""

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from tests.saver.corpus import config, history


class InputState(TypedDict):
    question: str


class OutputState(TypedDict):
    answer: str


class OverallState(InputState, OutputState):
    pass


def answer_node(state: InputState):
    # Example answer and an extra key
    return {"answer": "bye", "question": state["question"]}


class PublicState(TypedDict):
    a: str


class Node1Output(TypedDict):
    private_data: str


class Node2Input(TypedDict):
    private_data: str


def run(checkpointer, pause):
    builder = StateGraph(OverallState, input_schema=InputState, output_schema=OutputState)
    builder.add_node(answer_node)
    builder.add_edge(START, "answer_node")
    builder.add_edge("answer_node", END)
    graph = builder.compile(checkpointer=checkpointer)
    outputs = [graph.invoke({"question": "hi"}, config("io")), graph.get_state(config("io"))]

    printed = []

    def node_1(state: PublicState) -> Node1Output:
        output = {"private_data": "set by node_1"}
        printed.append(f"Entered node `node_1`: Input: {state}. Returned: {output}")
        return output

    def node_2(state: Node2Input) -> PublicState:
        output = {"a": "set by node_2"}
        printed.append(f"Entered node `node_2`: Input: {state}. Returned: {output}")
        return output

    def node_3(state: PublicState) -> PublicState:
        output = {"a": "set by node_3"}
        printed.append(f"Entered node `node_3`: Input: {state}. Returned: {output}")
        return output

    builder = StateGraph(PublicState).add_sequence([node_1, node_2, node_3])
    builder.add_edge(START, "node_1")
    graph = builder.compile(checkpointer=checkpointer, interrupt_before=["node_3"])
    thread = config("private")
    outputs.append(graph.invoke({"a": "set at start"}, thread))
    outputs.append(graph.get_state(thread))
    response = graph.invoke(None, thread)
    outputs.extend([response, printed, graph.get_state(thread), history(graph, thread)])
    return outputs
