"""The trial's UI in a real browser: a page server per trial (``server``) and the script it
adds to each page (``script``). The agents that drive it live in chaoseval.agents.browser."""
