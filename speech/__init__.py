"""Speech for phone calls: PCM16 8 kHz audio in, text out (Whisper); text in, PCM16 8 kHz audio out (Piper).

Offline only: the models come from a configured path or from the model packages installed from PyPI
(see `speech.models`). This package knows nothing about SIP or agents. Import the submodules you need;
this one imports nothing heavy.
"""
