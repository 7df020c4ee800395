"""Admission control: whether a request may run (admission/pipeline.py, docs/admission.md)."""
