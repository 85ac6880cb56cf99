"""Client quotas: the store of quota values (``store.py``), Kafka's rate windows
(``rates.py``), the quota managers that find each client's quota and throttle time
(``managers.py``) and requests served under them (``throttling.py``)."""

from .store import (
    CLIENT_ID,
    IP,
    USER,
    Alteration,
    ClientQuotaStore,
    Entity,
    QuotaRequestError,
)

__all__ = ["CLIENT_ID", "IP", "USER", "Alteration", "ClientQuotaStore", "Entity",
           "QuotaRequestError"]
