"""The adapter skeletons ``rtwo-vm conformance init`` writes (adapter.py, adapter.js)."""
