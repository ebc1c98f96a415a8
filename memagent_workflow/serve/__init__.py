"""MemAgent as a service: OpenAI's chat API over ``ask.py``'s episode
(``examples/serve.py``; docs/serve.md).

    config      the ``serve:`` section (address, episodes at once, queue, limits)
    shapes      OpenAI's request read into question and document; the error body
    reply       OpenAI's reply and streamed events
    auth        loopback by default; elsewhere only with an API key (Bearer)
    limits      body, document, chunks and question limits, refused naming them
    admission   the cap on episodes in flight and the bounded queue (429, 503 when closed)
    engine      AReaL's engine client in this process; a call's deadline; a failed
                call in words, as 502/503/504
    relaunch    the engine behind one handle that outlives a restart of its servers
    health      the model servers probed; the engine known down; restarts
    episode     one request's episode: the eval workflow's loop, its turns reported
    transport   a request's body, its client's disconnect, its log line
    app         the routes, streaming, OpenAI's error bodies
    shutdown    stopping in order, and the reaper of what was launched
"""
