"""The functional API's short-term memory: an entrypoint reads what its thread's last run
saved as `previous`, and `entrypoint.final(value=..., save=...)` returns one thing and
saves another. A chatbot keeps its conversation that way.

LangGraph's "Use the functional API", sections "Decouple return value from saved value"
(`accumulate`: prints 0, 1, 3) and "Chatbot example" (`workflow(inputs, *, previous)`
with `add_messages`, streamed with "hi! I'm bob" then "what's my name?")
(docs.langchain.com/oss/python/langgraph/use-functional-api).

Adapted: the model is a fake chat model; the printed values are outputs.
"""

from langchain_core.messages import BaseMessage
from langgraph.func import entrypoint, task
from langgraph.graph import add_messages

from tests.saver.corpus import chat, history


def run(checkpointer, pause):
    @entrypoint(checkpointer=checkpointer)
    def accumulate(n: int, *, previous: int | None) -> entrypoint.final[int, int]:
        previous = previous or 0
        total = previous + n
        # Return the *previous* value to the caller but save the *new* total.
        return entrypoint.final(value=previous, save=total)

    config = {"configurable": {"thread_id": "my-thread"}}
    outputs = [accumulate.invoke(n, config=config) for n in (1, 2, 3)]
    outputs.extend([accumulate.get_state(config), history(accumulate, config)])

    model = chat("Hi Bob! Nice to meet you.", "Your name is Bob.")

    @task
    def call_model(messages: list[BaseMessage]):
        return model.invoke(messages)

    @entrypoint(checkpointer=checkpointer)
    def workflow(inputs: list[BaseMessage], *, previous: list[BaseMessage]):
        if previous:
            inputs = add_messages(previous, inputs)

        response = call_model(inputs).result()
        return entrypoint.final(value=response, save=add_messages(inputs, response))

    config = {"configurable": {"thread_id": "1"}}
    for content in ("hi! I'm bob", "what's my name?"):
        input_message = {"role": "user", "content": content}
        outputs.append(list(workflow.stream([input_message], config, stream_mode="values")))
    outputs.extend([workflow.get_state(config), history(workflow, config)])
    return outputs
