"""The browser interface under /ui: sign-in, inbox, decisions, threads, the dashboard.

Server-rendered (Jinja2) pages over the same services, permissions and
decision code as the HTTP API; a little JavaScript refreshes the inbox.
`api.ui.mount.install_ui(app)` adds it to the app.
"""
