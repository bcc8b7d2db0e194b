"""The functional API reviewing a model's tool calls: an `@entrypoint` agent loop whose
`review_tool_call` pauses at each call; the human continues it, updates its arguments, or
answers with feedback in the tool's place. The entrypoint saves the conversation with
`entrypoint.final(value=..., save=...)` and reads it back as `previous`.

LangGraph's "Use the functional API", section "Human-in-the-loop", "Review tool calls"
(docs.langchain.com/oss/python/langgraph/use-functional-api): `review_tool_call` with
actions "continue", "update" and "feedback"; the `agent` entrypoint with `call_model`
and `call_tool` tasks (from the docs' ReAct agent with the functional API,
`get_weather`).

Adapted: the model is a fake chat model; the three reviews are each on a thread of their
own; a second turn on the first thread shows `previous`.
"""

from langchain_core.messages import ToolCall, ToolMessage
from langchain_core.tools import tool
from langgraph.func import entrypoint, task
from langgraph.graph.message import add_messages
from langgraph.types import Command, interrupt

from tests.saver.corpus import calls, chat, config, paused
from tests.saver.corpus import tool_call as asked


@tool
def get_weather(location: str):
    """Call to get the weather from a specific location."""
    if any(city in location.lower() for city in ["sf", "san francisco"]):
        return "It's sunny!"
    elif "boston" in location.lower():
        return "It's rainy!"
    else:
        return f"I am not sure what the weather is in {location}"


def review_tool_call(tool_call: ToolCall) -> ToolCall | ToolMessage:
    """Review a tool call, returning a validated version."""
    human_review = interrupt(
        {
            "question": "Is this correct?",
            "tool_call": tool_call,
        }
    )
    review_action = human_review["action"]
    review_data = human_review.get("data")
    if review_action == "continue":
        return tool_call
    elif review_action == "update":
        return {**tool_call, **{"args": review_data}}
    elif review_action == "feedback":
        return ToolMessage(
            content=review_data, name=tool_call["name"], tool_call_id=tool_call["id"]
        )
    return None


def build(checkpointer):
    model = chat(
        calls(asked("get_weather", {"location": "san francisco"}, "call_weather")),
        "Here is the weather.",
        "You asked about the weather.",
    )
    tools_by_name = {get_weather.name: get_weather}

    @task
    def call_model(messages):
        """Call model with a sequence of messages."""
        return model.bind_tools([get_weather]).invoke(messages)

    @task
    def call_tool(tool_call):
        tool = tools_by_name[tool_call["name"]]
        observation = tool.invoke(tool_call["args"])
        return ToolMessage(content=observation, tool_call_id=tool_call["id"])

    @entrypoint(checkpointer=checkpointer)
    def agent(messages, previous):
        if previous is not None:
            messages = add_messages(previous, messages)

        llm_response = call_model(messages).result()
        while True:
            if not llm_response.tool_calls:
                break

            # Review tool calls
            tool_results = []
            tool_calls = []
            for i, tool_call in enumerate(llm_response.tool_calls):
                review = review_tool_call(tool_call)
                if isinstance(review, ToolMessage):
                    tool_results.append(review)
                else:  # is a validated tool call
                    tool_calls.append(review)
                    if review != tool_call:
                        llm_response.tool_calls[i] = review  # update message

            # Execute remaining tool calls
            tool_result_futures = [call_tool(tool_call) for tool_call in tool_calls]
            remaining_tool_results = [fut.result() for fut in tool_result_futures]

            # Append to message list
            messages = add_messages(
                messages,
                [llm_response, *tool_results, *remaining_tool_results],
            )

            # Call model again
            llm_response = call_model(messages).result()

        # Generate final response
        messages = add_messages(messages, llm_response)
        return entrypoint.final(value=llm_response, save=messages)

    return agent


def run(checkpointer, pause):
    outputs = []
    for thread_id, review in (
        ("continue", {"action": "continue"}),
        ("update", {"action": "update", "data": {"location": "Boston"}}),
        (
            "feedback",
            {"action": "feedback", "data": "User requested changes: use <city, country> format."},
        ),
    ):
        agent = build(checkpointer)
        thread = config(thread_id)
        user_message = {"role": "user", "content": "What's the weather in san francisco?"}
        chunks = list(agent.stream([user_message], thread))
        paused(pause, thread_id, chunks)
        outputs.append(chunks)
        outputs.append(list(agent.stream(Command(resume=review), thread)))
        outputs.append(agent.get_state(thread))
        if thread_id == "continue":
            second = {"role": "user", "content": "What did I ask?"}
            outputs.append(agent.invoke([second], thread))
            outputs.append(agent.get_state(thread))
    return outputs
