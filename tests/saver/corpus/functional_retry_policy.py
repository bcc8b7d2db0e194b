"""The functional API's retry policy: a `@task(retry_policy=RetryPolicy(retry_on=
ValueError))` that fails once is retried within the same run, and the run succeeds.

LangGraph's "Use the functional API", section "Retry policy"
(docs.langchain.com/oss/python/langgraph/use-functional-api): `get_info` raises
`ValueError('Failure')` on its first attempt; `main.invoke({'any_input': 'foobar'},
config=config)` returns 'OK'.

Adapted: the attempts are counted in `run`; the policy waits no time between attempts
(`initial_interval=0`, no jitter: the corpus has no sleeps); the state and history are
part of the outputs.
"""

from langgraph.func import entrypoint, task
from langgraph.types import RetryPolicy

from tests.saver.corpus import config as thread_config
from tests.saver.corpus import history


def run(checkpointer, pause):
    attempts = [0]
    retry_policy = RetryPolicy(retry_on=ValueError, initial_interval=0, jitter=False)

    @task(retry_policy=retry_policy)
    def get_info():
        attempts[0] += 1
        if attempts[0] < 2:
            raise ValueError("Failure")
        return "OK"

    @entrypoint(checkpointer=checkpointer)
    def main(inputs, writer):
        return get_info().result()

    config = thread_config("1")
    result = main.invoke({"any_input": "foobar"}, config=config)
    return [result, attempts, main.get_state(config), history(main, config)]
