"""Chat-history services for Kotlin (spec §16): compression of older messages. No HTTP here."""
