"""Transcript correction agent (`docs/api.md`, kb-contract.md §5, spec §17): rules
stored as KB chunks, corrections by the local model in chunks that fit the GPU. No HTTP here."""
