"""The functional API running tasks in parallel, each of which pauses for review: the
entrypoint starts one task per topic and waits for their results in order, so it reports
the first task's interrupt; answered (by interrupt id), it reports the next one, until
all are answered and the paragraphs are joined.

LangGraph's "Use the functional API", section "Parallel execution", extended example
"parallel LLM calls" (docs.langchain.com/oss/python/langgraph/use-functional-api):
`generate_paragraph(topic)` per topic, `"\n\n".join(paragraphs)`; combined with the
interrupt of "Human-in-the-loop" and the resume map of LangGraph's "Add
human-in-the-loop", "Resume multiple interrupts with one invocation".

Adapted: the model is LangChain's `ParrotFakeChatModel` (it answers with the prompt, so
that parallel calls answer alike in any order); each paragraph is reviewed by
`interrupt` before it is used; the answers are keyed by the interrupts `get_state`
reports.
"""

from langchain_core.language_models.fake_chat_models import ParrotFakeChatModel
from langgraph.func import entrypoint, task
from langgraph.types import Command, interrupt

from tests.saver.corpus import config, history, paused


def run(checkpointer, pause):
    llm = ParrotFakeChatModel()

    @task
    def generate_paragraph(topic: str) -> str:
        response = llm.invoke(
            [
                {"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": f"Write a paragraph about {topic}."},
            ]
        )
        return interrupt({"review": response.content, "topic": topic})

    @entrypoint(checkpointer=checkpointer)
    def workflow(topics: list[str]) -> str:
        """Generates multiple paragraphs in parallel and combines them."""
        futures = [generate_paragraph(topic) for topic in topics]
        paragraphs = [f.result() for f in futures]
        return "\n\n".join(paragraphs)

    thread = config("paragraphs")
    result = workflow.invoke(
        ["quantum computing", "climate change", "history of aviation"], config=thread
    )
    outputs = [result]
    while isinstance(result, dict):
        paused(pause, "paragraphs", result)
        state = workflow.get_state(thread)
        answers = {
            interrupt.id: f"Reviewed paragraph on {interrupt.value['topic']}."
            for interrupt in state.interrupts
        }
        result = workflow.invoke(Command(resume=answers), config=thread)
        outputs.extend([state, result])
    outputs.extend([workflow.get_state(thread), history(workflow, thread)])
    return outputs
