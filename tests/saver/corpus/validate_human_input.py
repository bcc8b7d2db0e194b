"""Several interrupts in one node: a node that validates a human's answer asks again, in a
loop, until the answer is valid; each resume replays the earlier answers by position.

LangGraph's "Add human-in-the-loop", section "Validate human input", extended example
"validating user input" (docs.langchain.com/oss/python/langgraph/add-human-in-the-loop):
`get_valid_age` calls `interrupt(prompt)` until `int(user_input)` is a non-negative
integer; resumed with "not a number", "-10", then "25".

Adapted: a fixed thread id instead of a `uuid4()`; `report_age` records its line rather
than printing it; the state and the history while paused are part of the outputs.
"""

from typing import TypedDict

from langgraph.constants import END
from langgraph.graph import StateGraph
from langgraph.types import Command, interrupt

from tests.saver.corpus import config, history, paused


class State(TypedDict):
    age: int


def get_valid_age(state: State) -> State:
    prompt = "Please enter your age (must be a non-negative integer)."

    while True:
        user_input = interrupt(prompt)

        # Validate the input
        try:
            age = int(user_input)
            if age < 0:
                raise ValueError("Age must be non-negative.")
            break  # Valid input received
        except (ValueError, TypeError):
            prompt = f"'{user_input}' is not valid. Please enter a non-negative integer for age."

    return {"age": age}


def run(checkpointer, pause):
    printed = []

    def report_age(state: State) -> State:
        printed.append(f"Human is {state['age']} years old.")
        return state

    builder = StateGraph(State)
    builder.add_node("get_valid_age", get_valid_age)
    builder.add_node("report_age", report_age)
    builder.set_entry_point("get_valid_age")
    builder.add_edge("get_valid_age", "report_age")
    builder.add_edge("report_age", END)
    graph = builder.compile(checkpointer=checkpointer)

    thread = config("age")
    outputs = []
    result = graph.invoke({}, config=thread)
    outputs.append(result["__interrupt__"])
    for answer in ("not a number", "-10"):
        paused(pause, "age", result)
        outputs.append(graph.get_state(thread))
        result = graph.invoke(Command(resume=answer), config=thread)
        outputs.append(result["__interrupt__"])
    paused(pause, "age", result)
    final_result = graph.invoke(Command(resume="25"), config=thread)
    return [*outputs, final_result, printed, graph.get_state(thread), history(graph, thread)]
