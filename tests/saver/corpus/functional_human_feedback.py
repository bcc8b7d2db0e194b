"""The functional API with an interrupt: an `@entrypoint` composes three `@task`s, the
second of which pauses for feedback; on resume the first task's saved result is reused.

LangGraph's "Use the functional API", section "Human-in-the-loop", "Basic
human-in-the-loop workflow" (docs.langchain.com/oss/python/langgraph/use-functional-api):
`step_1` appends "bar", `human_feedback` asks `interrupt(f"Please provide feedback:
{input_query}")`, `step_3` appends "qux"; streamed with "foo", then with
`Command(resume="baz")`.

Adapted: the entrypoint is defined in `run` (its checkpointer is the one under test); the
tasks count their runs; the state and history are part of the outputs.
"""

from langgraph.func import entrypoint, task
from langgraph.types import Command, interrupt

from tests.saver.corpus import config, history, paused


def run(checkpointer, pause):
    runs = {"step_1": 0, "human_feedback": 0, "step_3": 0}

    @task
    def step_1(input_query):
        """Append bar."""
        runs["step_1"] += 1
        return f"{input_query} bar"

    @task
    def human_feedback(input_query):
        """Append user input."""
        runs["human_feedback"] += 1
        feedback = interrupt(f"Please provide feedback: {input_query}")
        return f"{input_query} {feedback}"

    @task
    def step_3(input_query):
        """Append qux."""
        runs["step_3"] += 1
        return f"{input_query} qux"

    @entrypoint(checkpointer=checkpointer)
    def graph(input_query):
        result_1 = step_1(input_query).result()
        result_2 = human_feedback(result_1).result()
        return step_3(result_2).result()

    thread = config("1")
    first = list(graph.stream("foo", thread))
    paused(pause, "1", first)
    state = graph.get_state(thread)
    second = list(graph.stream(Command(resume="baz"), thread))
    return [first, state, second, runs, graph.get_state(thread), history(graph, thread)]
