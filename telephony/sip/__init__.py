"""SIP messages (RFC 3261 §7, §20, §25): parser, serializer, header values, digest auth.

The transport, transactions, dialogs and the user agent live in sibling modules and build on
`telephony.sip.message`; nothing here does I/O.
"""
