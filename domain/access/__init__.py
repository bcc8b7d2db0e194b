"""Who acts: principals, API keys, the actor on each event, refused attempts."""
