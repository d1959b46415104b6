"""The ``rtwo-vm`` command line: the composition root over spec, reference_vm and the tools."""
