"""The test harness, shared by tests/ and benchmarks/: real peers (sipp, baresip) and our own SIP test peer
(peers), TLS certificates (certs), a throw-away PostgreSQL cluster (postgres), Kamailio (kamailio) and a
Kamailio dispatcher in front of several voice nodes (cluster), a spoken corpus made on the fly (speech_corpus)
and a fake Ollama server (fake_ollama). Not part of the installed packages; pytest fixtures in it are enabled
by tests/conftest.py.
"""
