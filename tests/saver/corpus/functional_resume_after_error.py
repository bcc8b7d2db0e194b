"""The functional API resuming after an error: a task fails, the entrypoint raises; the
thread is resumed with `invoke(None, config)` and the task that had finished is not run
again (its result was saved), the failed one runs again and succeeds.

LangGraph's "Use the functional API", section "Resuming after an error"
(docs.langchain.com/oss/python/langgraph/use-functional-api): `slow_task` then
`get_info`, which raises `ValueError("Failure")` on its first attempt; `main.invoke(None,
config=config)` returns 'Ran slow task.'.

Adapted: `slow_task` does not sleep (the corpus has no sleeps), the attempts are counted
in `run`, and the error, the state after it (the failed task's error in its
`PregelTask`) and the runs of each task are part of the outputs.
"""

from langgraph.func import entrypoint, task
from langgraph.types import StreamWriter

from tests.saver.corpus import config as thread_config
from tests.saver.corpus import history


def run(checkpointer, pause):
    attempts = {"get_info": 0, "slow_task": 0}

    @task()
    def get_info():
        """Simulates a task that fails once before succeeding."""
        attempts["get_info"] += 1
        if attempts["get_info"] < 2:
            raise ValueError("Failure")  # Simulate a failure on the first attempt
        return "OK"

    @task
    def slow_task():
        """Simulates a slow-running task (here without the delay)."""
        attempts["slow_task"] += 1
        return "Ran slow task."

    @entrypoint(checkpointer=checkpointer)
    def main(inputs, writer: StreamWriter):
        slow_task_result = slow_task().result()  # Blocking call to slow_task
        get_info().result()  # Exception will be raised here on the first attempt
        return slow_task_result

    config = thread_config("1")
    outputs = []
    try:
        main.invoke({"any_input": "foobar"}, config=config)
    except ValueError as error:
        outputs.append(error)
    outputs.append(main.get_state(config))
    outputs.append(dict(attempts))
    outputs.append(main.invoke(None, config=config))
    outputs.extend([attempts, main.get_state(config), history(main, config)])
    return outputs
