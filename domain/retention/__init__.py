"""The record's life: retention policies, legal holds and the purges they allow."""
