// The browser build of LangGraph's JS SDK for tests/api/js/test_cross_origin.py:
// bundled by esbuild into one script that sets `LangGraphClient`.
import { Client } from "@langchain/langgraph-sdk";

globalThis.LangGraphClient = Client;
