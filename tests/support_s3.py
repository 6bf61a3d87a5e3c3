"""A real S3-compatible server on loopback: moto's server mode, with IAM enforcement on demand."""

from __future__ import annotations

import json
import logging

import boto3
import httpx
from botocore.config import Config
from moto.server import ThreadedMotoServer

from exports.s3_clients import S3Credentials

ROOT_KEY = "AKIAROOTTESTKEY00000"  # moto accepts any key while auth is off
ROOT_SECRET = "root-secret"
REGION = "us-east-1"


class S3Server:
    def __init__(self):
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self._server.start()
        host, port = self._server.get_host_and_port()
        self.host, self.port = host, port
        self.endpoint = f"http://{host}:{port}"

    def stop(self) -> None:
        self._server.stop()

    def reset(self) -> None:
        self.set_auth_enforced(False)
        httpx.post(f"{self.endpoint}/moto-api/reset")

    def set_auth_enforced(self, enforced: bool) -> None:
        # Content-Type text/plain matters: with a form type Flask eats the body (moto then 500s).
        httpx.post(f"{self.endpoint}/moto-api/reset-auth", content=b"0" if enforced else b"inf",
                   headers={"Content-Type": "text/plain"})

    def client(self, service: str = "s3", credentials: S3Credentials | None = None, **config):
        creds = credentials or S3Credentials(ROOT_KEY, ROOT_SECRET)
        return boto3.client(
            service, endpoint_url=self.endpoint, region_name=REGION,
            aws_access_key_id=creds.access_key_id, aws_secret_access_key=creds.secret_access_key,
            aws_session_token=creds.session_token,
            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}, **config),
        )

    def create_bucket(self, name: str) -> str:
        self.client().create_bucket(Bucket=name)
        return name

    def create_user(self, name: str, statements: list[dict] | None = None) -> S3Credentials:
        """An IAM user with an inline policy made of `statements` (none: no permissions at all)."""
        iam = self.client("iam")
        iam.create_user(UserName=name)
        if statements:
            policy = {"Version": "2012-10-17", "Statement": statements}
            iam.put_user_policy(UserName=name, PolicyName=f"{name}-policy", PolicyDocument=json.dumps(policy))
        key = iam.create_access_key(UserName=name)["AccessKey"]
        return S3Credentials(key["AccessKeyId"], key["SecretAccessKey"])

    def assume_role(self, user: S3Credentials, role_name: str, statements: list[dict]) -> S3Credentials:
        """Temporary STS credentials (with a session token) for a role `user` may assume."""
        iam = self.client("iam")
        user_arn = self.client("sts", credentials=user).get_caller_identity()["Arn"]
        trust = {"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Principal": {"AWS": user_arn}, "Action": "sts:AssumeRole"}]}
        role = iam.create_role(RoleName=role_name, AssumeRolePolicyDocument=json.dumps(trust))["Role"]
        iam.put_role_policy(RoleName=role_name, PolicyName=f"{role_name}-policy",
                            PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": statements}))
        creds = self.client("sts", credentials=user).assume_role(RoleArn=role["Arn"], RoleSessionName="test")
        c = creds["Credentials"]
        return S3Credentials(c["AccessKeyId"], c["SecretAccessKey"], c["SessionToken"])


def allow(actions: list[str], bucket: str, prefix: str = "*") -> dict:
    """A policy statement allowing `actions` on the objects (and the bucket itself) of `bucket`."""
    return {"Effect": "Allow", "Action": actions,
            "Resource": [f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/{prefix}"]}
