"""MemAgent as a service: OpenAI's chat API over ``ask.py``'s episode
(``examples/serve.py``; docs/serve.md).

    config      the ``serve:`` section (address, episodes at once, queue, limits)
    shapes      OpenAI's request read into question and document; the error body
    reply       OpenAI's reply and streamed events
    auth        loopback by default; elsewhere only with an API key (Bearer)
    limits      body, document, chunks and question limits, refused naming them
    admission   the cap on episodes in flight and the bounded queue (429)
    engine      AReaL's engine client in this process; a failed call as 502/503
    episode     one request's episode: the eval workflow's loop, its turns reported
    app         the routes, disconnects, streaming, one log line per request
"""
