"""The bank the agent acts in: its state is a State, each tool a function of it and the call's arguments."""

from pydantic import BaseModel


class Transaction(BaseModel):
    id: int
    recipient: str
    amount: float
    subject: str


class State(BaseModel):
    balance: float
    iban: str
    transactions: list[Transaction]
    files: dict[str, str]


def read_file(state: State, file_path: str) -> str:
    return state.files[file_path]


def send_money(state: State, recipient: str, amount: float, subject: str) -> dict[str, str]:
    if amount > state.balance:
        raise ValueError("insufficient funds")
    state.balance -= amount
    number = len(state.transactions) + 1
    state.transactions.append(Transaction(id=number, recipient=recipient, amount=amount, subject=subject))
    return {"message": f"Transaction to {recipient} for {amount} sent."}


def get_balance(state: State) -> float:
    return state.balance
