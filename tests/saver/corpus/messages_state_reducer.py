"""`MessagesState` and the `add_messages` reducer: messages given as dicts or tuples
become LangChain messages with ids, a message with an existing id replaces it, and
`RemoveMessage` deletes one message or (`REMOVE_ALL_MESSAGES`) all of them; also through
`update_state`.

LangGraph's "Add memory", section "Delete messages", full example "delete messages"
(`call_model` then `delete_messages`, which removes the earliest two messages once there
are more than two; "hi! I'm bob", then "what's my name?") and `REMOVE_ALL_MESSAGES`
(docs.langchain.com/oss/python/langgraph/add-memory); LangGraph's "Use the graph API",
section "MessagesState" (docs.langchain.com/oss/python/langgraph/use-graph-api).

Adapted: the model is a fake chat model; a second thread edits the conversation with
`update_state`: it replaces a message by id, removes one, then removes all.
"""

from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, SystemMessage
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from tests.saver.corpus import chat, config, history


def delete_messages(state):
    messages = state["messages"]
    if len(messages) > 2:
        # remove the earliest two messages
        return {"messages": [RemoveMessage(id=m.id) for m in messages[:2]]}
    return None


def run(checkpointer, pause):
    model = chat("Hi Bob!", "Your name is Bob.", "Hello Ann.")

    def call_model(state: MessagesState):
        response = model.invoke(state["messages"])
        return {"messages": response}

    builder = StateGraph(MessagesState)
    builder.add_sequence([call_model, delete_messages])
    builder.add_edge(START, "call_model")
    app = builder.compile(checkpointer=checkpointer)

    thread = config("1")
    outputs = []
    for content in ("hi! I'm bob", "what's my name?"):
        outputs.append(
            [
                [(message.type, message.content) for message in event["messages"]]
                for event in app.stream(
                    {"messages": [{"role": "user", "content": content}]},
                    thread,
                    stream_mode="values",
                )
            ]
        )
    outputs.extend([app.get_state(thread), history(app, thread)])

    thread = config("2")
    outputs.append(
        app.invoke(
            {
                "messages": [
                    SystemMessage("Be brief.", id="system"),
                    ("user", "hello"),
                    HumanMessage("I'm Ann", id="ann", name="ann"),
                ]
            },
            thread,
        )
    )
    app.update_state(thread, {"messages": [AIMessage("Hello Ann (edited)", id="edited")]})
    ai = app.get_state(thread).values["messages"][-2]
    app.update_state(thread, {"messages": [AIMessage("Replaced", id=ai.id)]})
    outputs.append(app.get_state(thread).values)
    app.update_state(thread, {"messages": [RemoveMessage(id="ann")]})
    outputs.append(app.get_state(thread).values)
    app.update_state(thread, {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES)]})
    outputs.extend([app.get_state(thread), history(app, thread)])
    return outputs
