"""Personal data in the record: encrypted per data subject, erased by destroying the key."""
