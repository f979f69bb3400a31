"""The thin Qt layer: shows service state, sends user intents. No business rules here."""
