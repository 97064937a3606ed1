"""Tables, figures and pages built from the store's tidy episode table."""
