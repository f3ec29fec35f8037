"""Node usage samples on the bus: their subjects and batching (wire.py), the latest sample per node a
reader keeps (book.py, pure) and the subscription that feeds it (subscriber.py). The messages themselves
are contracts/usage.py."""
